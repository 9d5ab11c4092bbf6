export { type Command, parseCommand, UsageError } from './args.js';
export { HELP } from './help.js';
export { detectFormat, parsePhoneList, readInput } from './input.js';
export { outcomesByPosition, ResultMismatchError } from './outcome.js';
export { CLI_VERSION, type CliEnvironment, DEFAULT_BASE_URL, runCli } from './run.js';
export {
  chooseColumn,
  detectDelimiter,
  headerWords,
  InputFileError,
  looksLikeHeader,
  namesPhone,
} from './table.js';
