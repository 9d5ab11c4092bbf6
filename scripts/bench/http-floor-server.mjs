#!/usr/bin/env node
// The HTTP floor's server: node:http in its own process, reads the request body and answers a small
// JSON document (the size of a one-number result). Prints its port on stdout once listening.
import http from 'node:http';

const answer = Buffer.from(
  JSON.stringify({
    prohibited_numbers_to_call: [],
    safe_numbers_to_call: ['+573001234567'],
    invalid_numbers: [],
    summary: { total_checked: 1, prohibited_numbers: 0, safe_numbers: 1, invalid_numbers: 0 },
  }),
);
const server = http.createServer({ keepAliveTimeout: 60_000 }, (req, res) => {
  req.on('data', () => {});
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': answer.length });
    res.end(answer);
  });
});
server.listen(0, '127.0.0.1', () => process.stdout.write(`${server.address().port}\n`));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
