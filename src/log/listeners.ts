/**
 * A typed listener registry: event names are kebab-case keys of a map from name to payload.
 * Listener errors are caught and reported to `onListenerError` so one bad subscriber cannot
 * break a write that has already been stored.
 */
export type ListenerMap = Record<string, unknown>

export class Listeners<Events extends ListenerMap> {
  private readonly registry = new Map<keyof Events, Set<(payload: never) => void>>()

  constructor(private readonly onListenerError: (error: unknown) => void = (error) => queueMicrotask(() => { throw error })) {}

  /** Adds a listener; returns a function that removes it. */
  on<Name extends keyof Events>(name: Name, listener: (payload: Events[Name]) => void): () => void {
    let set = this.registry.get(name)
    if (!set) this.registry.set(name, (set = new Set()))
    set.add(listener as (payload: never) => void)
    return () => set.delete(listener as (payload: never) => void)
  }

  emit<Name extends keyof Events>(name: Name, payload: Events[Name]): void {
    const set = this.registry.get(name)
    if (!set) return
    for (const listener of [...set]) {
      try {
        ;(listener as (payload: Events[Name]) => void)(payload)
      } catch (error) {
        this.onListenerError(error)
      }
    }
  }

  has(name: keyof Events): boolean {
    return (this.registry.get(name)?.size ?? 0) > 0
  }
}
