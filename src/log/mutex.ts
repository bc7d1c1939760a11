/**
 * Serializes async critical sections. Writes to a space read its tips and then store a batch
 * that extends them; two interleaved writers would both extend the same tip.
 */
export class Mutex {
  private tail: Promise<unknown> = Promise.resolve()

  run<T>(task: () => Promise<T>): Promise<T> {
    const result = this.tail.then(task, task)
    this.tail = result.then(() => undefined, () => undefined)
    return result
  }
}
