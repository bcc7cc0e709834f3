/**
 * An in-memory file system (memfs) whose calls can fail as a full disk or a failing device
 * would: every call, sync or promise, is first shown to `refuse`, and when it names an errno
 * the call throws an ErrnoException with that `code` and the call as `syscall`, doing nothing.
 */
import { createMemFs, type MemFs } from "./memfs.js";

/**
 * @param refuse given each call's name (`writeSync`, `open`, `rename`, …), the errno it fails
 *   with (`"ENOSPC"`, `"EIO"`, …), or null to let it through
 */
export function createFaultyMemFs(refuse: (call: string) => string | null): MemFs {
  const inner = createMemFs();
  const check = (call: string): void => {
    const errno = refuse(call);
    if (errno === null) return;
    const error = new Error(`${errno}: simulated, ${call}`) as NodeJS.ErrnoException;
    error.code = errno;
    error.syscall = call.replace(/Sync$/, "");
    throw error;
  };
  const wrap = <T extends object>(target: T): T =>
    new Proxy(target, {
      get(t, key, receiver) {
        const value = Reflect.get(t, key, receiver) as unknown;
        if (typeof value !== "function" || typeof key !== "string") return value;
        return (...args: unknown[]) => {
          check(key);
          return (value as (...a: unknown[]) => unknown).apply(t, args);
        };
      },
    });
  const promises = wrap(inner.promises);
  return new Proxy(inner, {
    get(t, key, receiver) {
      if (key === "promises") return promises;
      return Reflect.get(wrap(t), key, receiver) as unknown;
    },
  });
}
