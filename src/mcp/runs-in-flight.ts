/** The runs a server has under way, and the signal that ends them all (the client gone, or the server stopped). */
export class RunsInFlight {
  readonly #ending = new AbortController();
  readonly #runs = new Set<Promise<unknown>>();
  get signal(): AbortSignal {
    return this.#ending.signal;
  }
  /** Tracks one run until it settles. */
  track<T>(run: Promise<T>): Promise<T> {
    this.#runs.add(run);
    void run.finally(() => this.#runs.delete(run)).catch(() => {});
    return run;
  }
  /** Cancels every run under way and waits until each has written its run directory. */
  async endAll(): Promise<void> {
    this.#ending.abort();
    await Promise.allSettled([...this.#runs]);
  }
}
