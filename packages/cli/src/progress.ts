const FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

export interface ProgressStream {
  write(text: string): unknown;
  isTTY?: boolean;
}

/** A one-line spinner on a terminal; silent when the stream is not a TTY (pipes, CI logs). */
export class Progress {
  #timer: NodeJS.Timeout | undefined;
  #frame = 0;
  #label = '';
  readonly #started = Date.now();

  constructor(private readonly stream: ProgressStream) {}

  get enabled(): boolean {
    return this.stream.isTTY === true;
  }

  start(label: string): void {
    this.#label = label;
    if (!this.enabled || this.#timer) return;
    this.#timer = setInterval(() => this.#render(), 100);
    this.#timer.unref();
    this.#render();
  }

  update(label: string): void {
    this.#label = label;
  }

  stop(): void {
    if (!this.#timer) return;
    clearInterval(this.#timer);
    this.#timer = undefined;
    this.stream.write('\r\x1b[2K');
  }

  #render(): void {
    const seconds = Math.floor((Date.now() - this.#started) / 1000);
    this.#frame = (this.#frame + 1) % FRAMES.length;
    this.stream.write(`\r\x1b[2K${FRAMES[this.#frame]} ${this.#label} (${seconds}s)`);
  }
}
