// Lets at most a fixed number of tasks run at once; the others wait for a turn, first come first served.
export class Turns {
  private taken = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(private readonly limit: number) {}

  /** Resolves when the caller may go; it must `give` the turn back when done. */
  async take(): Promise<void> {
    if (this.taken < this.limit) {
      this.taken++;
      return;
    }
    // Handed over by give(), without the count going down in between.
    await new Promise<void>((resolve) => this.waiting.push(resolve));
  }

  give(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.taken--;
  }
}
