#!/usr/bin/env node
// `node scripts/bench/unary-call.mjs [--rounds N] [--per N] [--bytes N]`: one bare unary call between two
// processes (grpc.health.v1 Check, or a SubmitJob carrying N bytes with --bytes), lone calls one after
// another, through Connect's own Node client and adapter against the kit's (unary-http2.ts: the same
// protocol code, the bodies read from the stream's events). A server process per adapter; the rounds
// alternate between the four client/adapter pairs (order reversed every round), so a neighbour's load
// falls on all. Prints per pair the median over rounds of the wall time per call and of the CPU per
// call of the client and of the server process. Compare pairs within one run, not across runs.
import { fork } from 'node:child_process';
import http2 from 'node:http2';
import { parseArgs } from 'node:util';
import { createClient } from '@connectrpc/connect';
import { connectNodeAdapter, createConnectTransport } from '@connectrpc/connect-node';
import { connectHttp2Adapter, rpcTransport } from '@dnc/kit';
import { healthv1, jobsv1 } from '@dnc/proto';

const { values } = parseArgs({
  options: {
    serve: { type: 'string' },
    rounds: { type: 'string', default: '8' },
    per: { type: 'string', default: '400' },
    bytes: { type: 'string', default: '0' },
  },
});

const SERVING = healthv1.HealthCheckResponse_ServingStatus.SERVING;

if (values.serve) {
  // The server process: `connect` (connectNodeAdapter) or `kit` (connectHttp2Adapter); GET /cpu answers
  // its CPU microseconds so far, outside the adapter.
  const adapter = values.serve === 'kit' ? connectHttp2Adapter : connectNodeAdapter;
  const handler = adapter({
    readMaxBytes: 64 * 1024 * 1024,
    acceptCompression: [],
    routes: (router) => {
      router.service(healthv1.Health, { check: () => ({ status: SERVING }) });
      router.service(jobsv1.JobsService, { submitJob: (req) => ({ job: { jobId: req.jobId } }) });
    },
  });
  const server = http2.createServer({ settings: { initialWindowSize: 4 * 1024 * 1024 } }, (req, res) => {
    if (req.url === '/cpu') {
      const { user, system } = process.cpuUsage();
      res.end(String(user + system));
      return;
    }
    handler(req, res);
  });
  server.listen(0, '127.0.0.1', () => process.send?.(server.address().port));
} else {
  const rounds = Number(values.rounds);
  const per = Number(values.per);
  const payload = new Uint8Array(Number(values.bytes));
  const servers = {};
  for (const name of ['connect', 'kit']) {
    const child = fork(new URL(import.meta.url).pathname, ['--serve', name], { stdio: 'inherit' });
    const port = await new Promise((resolve) => child.once('message', resolve));
    const url = `http://127.0.0.1:${port}`;
    const probe = http2.connect(url);
    const cpu = () =>
      new Promise((resolve) => {
        let text = '';
        const req = probe.request({ ':path': '/cpu' });
        req.setEncoding('utf8');
        req.on('data', (d) => {
          text += d;
        });
        req.on('end', () => resolve(Number(text)));
        req.end();
      });
    servers[name] = { child, url, probe, cpu };
  }
  const clients = {
    connect: (url) =>
      createConnectTransport({
        baseUrl: url,
        httpVersion: '2',
        useBinaryFormat: true,
        acceptCompression: [],
        readMaxBytes: 64 * 1024 * 1024,
        writeMaxBytes: 64 * 1024 * 1024,
        nodeOptions: { settings: { initialWindowSize: 4 * 1024 * 1024 } },
      }),
    kit: (url) => rpcTransport(url),
  };
  const pairs = [];
  for (const client of Object.keys(clients))
    for (const server of Object.keys(servers)) {
      const transport = clients[client](servers[server].url);
      const call =
        payload.length > 0
          ? (
              (c) => () =>
                c.submitJob({ jobId: 'bench', canonicalPhones: payload })
            )(createClient(jobsv1.JobsService, transport))
          : (
              (c) => () =>
                c.check({})
            )(createClient(healthv1.Health, transport));
      pairs.push({
        name: `client ${client.padEnd(7)} / adapter ${server.padEnd(7)}`,
        server,
        call,
        rows: [],
      });
    }
  const warm = payload.length > 0 ? 20 : 1000;
  for (const pair of pairs) for (let i = 0; i < warm; i++) await pair.call();
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? pairs : [...pairs].reverse();
    for (const pair of order) {
      const { cpu } = servers[pair.server];
      const s0 = await cpu();
      const c0 = process.cpuUsage();
      const t0 = performance.now();
      for (let i = 0; i < per; i++) await pair.call();
      const wall = performance.now() - t0;
      const c = process.cpuUsage(c0);
      const s1 = await cpu();
      pair.rows.push({
        wall: wall / per,
        client: (c.user + c.system) / 1000 / per,
        server: (s1 - s0) / 1000 / per,
      });
    }
  }
  const median = (xs) => xs.sort((a, b) => a - b)[xs.length >> 1];
  const what =
    payload.length > 0 ? `SubmitJob of ${payload.length.toLocaleString('en')} bytes` : 'Health Check';
  console.log(`${what}: ${rounds} rounds of ${per} lone calls; medians over rounds, ms per call`);
  for (const { name, rows } of pairs) {
    const [wall, client, server] = ['wall', 'client', 'server'].map((k) => median(rows.map((r) => r[k])));
    console.log(
      `${name}  wall ${wall.toFixed(3)}  CPU client ${client.toFixed(3)} + server ${server.toFixed(3)} = ${(client + server).toFixed(3)}`,
    );
  }
  for (const s of Object.values(servers)) {
    s.probe.close();
    s.child.kill();
  }
}
