// Preloaded into a child process (`node --require`): at exit, writes its peak resident set size
// (kilobytes, from getrusage) to the file named by DNC_MAX_RSS_FILE, so a test can bound the
// memory of a real run of a command.
const { writeFileSync } = require('node:fs');

process.once('exit', () => {
  const file = process.env.DNC_MAX_RSS_FILE;
  if (file) writeFileSync(file, String(process.resourceUsage().maxRSS));
});
