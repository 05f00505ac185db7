// The environment user functions run in (seed 002 §3.2): a lodash-like `_`, a deterministic
// `Math.random` and `Date`, and the dispatcher the server calls. Evaluated once per runtime.
"use strict";
(() => {
  const isObject = (value) => value !== null && (typeof value === "object" || typeof value === "function");
  const isPlainObject = (value) => value !== null && typeof value === "object" && !Array.isArray(value);
  const isIndex = (key) => /^(0|[1-9]\d*)$/.test(String(key));
  const toPath = (path) => {
    if (Array.isArray(path)) return path.map(String);
    const segments = [];
    String(path).replace(/[^.[\]]+|\[(?:(-?\d+(?:\.\d+)?)|(["'])((?:(?!\2)[^\\]|\\.)*?)\2)\]|(?=(?:\.|\[\])(?:\.|\[\]|$))/g,
      (match, number, quote, quoted) => {
        segments.push(quote ? quoted.replace(/\\(\\)?/g, "$1") : (number !== undefined ? number : match));
        return match;
      });
    return segments;
  };
  const get = (object, path, fallback) => {
    let current = object;
    for (const key of toPath(path)) {
      if (current === null || current === undefined) return fallback;
      current = current[key];
    }
    return current === undefined ? fallback : current;
  };
  const has = (object, path) => {
    let current = object;
    for (const key of toPath(path)) {
      if (!isObject(current) || !Object.prototype.hasOwnProperty.call(current, key)) return false;
      current = current[key];
    }
    return true;
  };
  const set = (object, path, value) => {
    if (!isObject(object)) return object;
    const keys = toPath(path);
    let current = object;
    keys.forEach((key, index) => {
      if (index === keys.length - 1) {
        current[key] = value;
      } else {
        if (!isObject(current[key])) current[key] = isIndex(keys[index + 1]) ? [] : {};
        current = current[key];
      }
    });
    return object;
  };
  const unset = (object, path) => {
    const keys = toPath(path);
    const parent = keys.length > 1 ? get(object, keys.slice(0, -1)) : object;
    if (!isObject(parent)) return true;
    const last = keys[keys.length - 1];
    if (Array.isArray(parent) && isIndex(last)) parent.splice(Number(last), 1);
    else delete parent[last];
    return true;
  };
  const cloneDeep = (value) => (value === undefined ? undefined : JSON.parse(JSON.stringify(value)));
  const merge = (target, ...sources) => {
    for (const source of sources) {
      if (!isObject(source)) continue;
      for (const key of Object.keys(source)) {
        const value = source[key];
        if (isObject(value) && isObject(target[key]) && Array.isArray(value) === Array.isArray(target[key])) merge(target[key], value);
        else if (value !== undefined) target[key] = isObject(value) ? cloneDeep(value) : value;
      }
    }
    return target;
  };
  globalThis._ = Object.freeze({
    get, set, has, unset, merge, cloneDeep, toPath, isObject, isPlainObject,
    isArray: Array.isArray,
    isString: (value) => typeof value === "string",
    isNumber: (value) => typeof value === "number",
    isNil: (value) => value === null || value === undefined,
    assign: Object.assign,
    keys: (value) => (isObject(value) ? Object.keys(value) : []),
    values: (value) => (isObject(value) ? Object.values(value) : []),
    clamp: (value, lower, upper) => Math.min(Math.max(value, lower), upper),
    update: (object, path, updater) => set(object, path, updater(get(object, path))),
  });

  // Determinism: the same message gives the same snapshot, so randomness is seeded from the
  // message and "now" is the message's time (or 0).
  let seed = 1;
  let now = 0;
  Math.random = () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let mixed = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    mixed = (mixed + Math.imul(mixed ^ (mixed >>> 7), 61 | mixed)) ^ mixed;
    return ((mixed ^ (mixed >>> 14)) >>> 0) / 4294967296;
  };
  const RealDate = Date;
  globalThis.Date = class Date extends RealDate {
    constructor(...parts) {
      if (parts.length === 0) super(now);
      else super(...parts);
    }
    static now() {
      return now;
    }
  };

  const functions = [];
  const patterns = new Map();
  const describe = (value) => (value === null ? "null" : Array.isArray(value) ? "an array" : typeof value);
  globalThis.__synapse = Object.freeze({
    compile(source) {
      functions.push(new Function("snapshot", "args", "context", "_", source));
      return functions.length - 1;
    },
    run(id, snapshotJson, argsJson, contextJson, randomSeed, time) {
      seed = randomSeed | 0;
      now = time;
      const snapshot = JSON.parse(snapshotJson);
      const result = functions[id](snapshot, JSON.parse(argsJson), Object.freeze(JSON.parse(contextJson)), globalThis._);
      const output = result === undefined ? snapshot : result;
      if (!isPlainObject(output)) {
        throw new TypeError("the function must return the snapshot object (or nothing), not " + describe(output));
      }
      return JSON.stringify(output);
    },
    check(source) {
      new Function("snapshot", "args", "context", "_", source);
      return "ok";
    },
    match(source, flags, text) {
      const key = flags + "/" + source;
      let pattern = patterns.get(key);
      if (pattern === undefined) {
        pattern = new RegExp(source, flags);
        patterns.set(key, pattern);
      }
      pattern.lastIndex = 0;
      const found = [];
      let match;
      while ((match = pattern.exec(text)) !== null) {
        found.push([match.index, match[0].length, match.slice(1).map((group) => (group === undefined ? null : group))]);
        if (match[0].length === 0) pattern.lastIndex += 1;
      }
      return JSON.stringify(found);
    },
  });
})();
