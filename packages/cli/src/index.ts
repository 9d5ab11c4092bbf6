export { type Command, parseCommand, USAGE, UsageError } from './args.js';
export { PhoneFileError, parsePhoneList, readPhoneFile } from './phone-file.js';
export { type CliEnvironment, DEFAULT_BASE_URL, runCli } from './run.js';
