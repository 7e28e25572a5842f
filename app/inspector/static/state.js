// The state as of each event, replayed in the browser from the events' own
// `actions.stateDelta`: the API keeps only the current state, and each event
// carries what it changed (a PATCH's stateDelta is stored as an event too).
// What no event carries is not replayed: the state given at create, and
// app:/user: keys written by other sessions (docs/inspector.md, "State over
// time").

export const SCOPES = ["app", "user", "session"];
const SNAPSHOT_EVERY = 256;

export function scopeOf(key) {
  if (key.startsWith("app:")) return "app";
  if (key.startsWith("user:")) return "user";
  if (key.startsWith("temp:")) return "temp";
  return "session";
}

export function deltaOf(event) {
  const actions = event?.actions;
  const delta = actions?.stateDelta ?? actions?.state_delta;
  return delta && typeof delta === "object" && !Array.isArray(delta) ? delta : {};
}

export function byScope(entries) {
  const grouped = { app: [], user: [], session: [], temp: [] };
  for (const entry of entries) grouped[scopeOf(entry.key)].push(entry);
  return grouped;
}

const same = (left, right) => JSON.stringify(left) === JSON.stringify(right);

// What one event did to the state before it: each key of its delta, added,
// changed, set to null ("removed": ADK's way to clear a key) or set again to
// the value it had ("unchanged").
export function changesOf(before, delta) {
  return Object.keys(delta)
    .sort()
    .map((key) => {
      const value = delta[key];
      const had = Object.hasOwn(before, key);
      let kind = "added";
      if (had && same(before[key], value)) kind = "unchanged";
      else if (value === null && had) kind = "removed";
      else if (had) kind = "changed";
      return { key, kind, before: had ? before[key] : undefined, value };
    });
}

export class StateTimeline {
  constructor() {
    this.events = [];
    this.snapshots = [{}]; // snapshots[n]: the state after the first n * SNAPSHOT_EVERY events
  }

  reset(events) {
    this.events = events;
    this.snapshots = [{}];
  }

  push(event) {
    this.events.push(event);
  }

  // The state after events[0..index] (index -1: before any event).
  stateAt(index) {
    const wanted = index + 1;
    const slot = Math.floor(wanted / SNAPSHOT_EVERY);
    while (this.snapshots.length <= slot) {
      const from = (this.snapshots.length - 1) * SNAPSHOT_EVERY;
      const state = { ...this.snapshots[this.snapshots.length - 1] };
      for (let i = from; i < from + SNAPSHOT_EVERY; i++) Object.assign(state, deltaOf(this.events[i]));
      this.snapshots.push(state);
    }
    const state = { ...this.snapshots[slot] };
    for (let i = slot * SNAPSHOT_EVERY; i < wanted; i++) Object.assign(state, deltaOf(this.events[i]));
    return state;
  }

  // Forget snapshots past `index` (events were removed or replaced there).
  invalidateFrom(index) {
    this.snapshots.length = Math.max(1, Math.floor(index / SNAPSHOT_EVERY) + 1);
  }
}
