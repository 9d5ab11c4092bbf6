// The runner's side of the proxy host (proxy-host.mjs): the chaos world's TcpProxy instances live in
// that child process, so the bytes they carry never wait on the runner's event loop (the load
// generator's, which times every request) and the runner's work never delays them. `RemoteProxy`
// offers TcpProxy's operations, each a promise that settles once the host has applied it.
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const HOST = fileURLToPath(new URL('./proxy-host.mjs', import.meta.url));

export class ProxyHost {
  #child;
  #seq = 0;
  #pending = new Map();
  #gone;
  #unhook;

  constructor(child) {
    this.#child = child;
    child.on('message', ({ seq, value, error }) => {
      const p = this.#pending.get(seq);
      if (!p) return;
      this.#pending.delete(seq);
      if (error === undefined) p.resolve(value);
      else p.reject(new Error(`proxy host: ${error}`));
    });
    child.once('exit', (code, signal) => {
      this.#gone = `the proxy host exited (${signal ?? code})`;
      for (const p of this.#pending.values()) p.reject(new Error(this.#gone));
      this.#pending.clear();
      this.#unhook();
    });
    // The host dies with the runner: on its exit, and when the runner is killed outright (the host
    // exits when its IPC channel closes). No signal handler here: the runner's own stops the world,
    // proxies included, before it exits (a handler that exited at once left every process running).
    const kill = () => child.kill('SIGKILL');
    process.on('exit', kill);
    this.#unhook = () => process.off('exit', kill);
  }

  /** Fork the host and wait until it listens for requests. */
  static async spawn() {
    // No inspector or other flags of the runner: the host needs none, and a port of its own otherwise.
    const child = fork(HOST, [], { execArgv: [], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    const host = new ProxyHost(child);
    await new Promise((resolve, reject) => {
      const onMessage = (m) => {
        if (!m?.ready) return;
        child.off('message', onMessage);
        child.off('exit', onExit);
        resolve();
      };
      const onExit = (code, signal) =>
        reject(new Error(`the proxy host exited at start (${signal ?? code})`));
      child.on('message', onMessage);
      child.once('exit', onExit);
    });
    return host;
  }

  get pid() {
    return this.#child.pid;
  }

  request(op, args) {
    if (this.#gone) return Promise.reject(new Error(this.#gone));
    const seq = ++this.#seq;
    return new Promise((resolve, reject) => {
      this.#pending.set(seq, { resolve, reject });
      this.#child.send({ seq, op, args }, (error) => {
        if (!error) return;
        this.#pending.delete(seq);
        reject(new Error(`proxy host: ${error.message}`));
      });
    });
  }

  /** A proxy in the host, listening on a free port of 127.0.0.1, carrying to `upstreams`. */
  async start(upstreams) {
    const { id, port } = await this.request('start', { upstreams });
    return new RemoteProxy(this, id, port);
  }

  /** Close the channel (the host exits on it) and wait for the exit; killed after 5 s. */
  async close() {
    if (this.#gone) return;
    const exited = new Promise((resolve) => this.#child.once('exit', resolve));
    const timer = setTimeout(() => this.#child.kill('SIGKILL'), 5_000);
    if (this.#child.connected) this.#child.disconnect();
    await exited;
    clearTimeout(timer);
  }
}

/** One TcpProxy of the host (packages/devstack/src/tcp-proxy.ts), its operations asynchronous. */
export class RemoteProxy {
  #host;
  #id;

  constructor(host, id, port) {
    this.#host = host;
    this.#id = id;
    this.port = port;
  }

  get address() {
    return `127.0.0.1:${this.port}`;
  }

  setUpstreams(upstreams) {
    return this.#host.request('setUpstreams', { id: this.#id, upstreams });
  }

  setFault(fault) {
    return this.#host.request('setFault', { id: this.#id, fault });
  }

  resetAll() {
    return this.#host.request('resetAll', { id: this.#id });
  }

  stallAll() {
    return this.#host.request('stallAll', { id: this.#id });
  }

  /** The connections it holds open. */
  open() {
    return this.#host.request('open', { id: this.#id });
  }

  stats() {
    return this.#host.request('stats', { id: this.#id });
  }

  close() {
    return this.#host.request('close', { id: this.#id });
  }
}
