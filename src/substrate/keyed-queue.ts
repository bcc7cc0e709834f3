/**
 * One-at-a-time execution per key (the store keys writes by repository and ref): a task starts when the previous task of
 * the same key has settled, whatever its outcome. Keys with nothing queued hold no memory.
 */
export interface KeyedQueue {
  /** Runs `task` after every earlier task of `key`; resolves or rejects with its outcome. */
  run<T>(key: string, task: () => Promise<T>): Promise<T>;
  /** Resolves when every task queued so far (any key) has settled. */
  idle(): Promise<void>;
}

export function createKeyedQueue(): KeyedQueue {
  const tails = new Map<string, Promise<void>>();
  return {
    run<T>(key: string, task: () => Promise<T>): Promise<T> {
      const previous = tails.get(key) ?? Promise.resolve();
      const result = previous.then(task);
      const tail = result.then(
        () => undefined,
        () => undefined,
      );
      tails.set(key, tail);
      void tail.then(() => {
        if (tails.get(key) === tail) tails.delete(key);
      });
      return result;
    },
    async idle(): Promise<void> {
      while (tails.size > 0) await Promise.all(tails.values());
    },
  };
}
