/** A counting semaphore with first-in, first-out waiters: a consumer's `concurrency`. */
export interface Semaphore {
  acquire(): Promise<void>;
  release(): void;
  readonly inUse: number;
}

export function createSemaphore(size: number): Semaphore {
  let inUse = 0;
  const waiters: (() => void)[] = [];
  return {
    get inUse() {
      return inUse;
    },
    acquire() {
      if (inUse < size) {
        inUse += 1;
        return Promise.resolve();
      }
      return new Promise<void>((resolve) => waiters.push(resolve));
    },
    release() {
      const next = waiters.shift();
      // The slot passes straight to the next waiter: inUse stays the same.
      if (next !== undefined) next();
      else inUse -= 1;
    },
  };
}
