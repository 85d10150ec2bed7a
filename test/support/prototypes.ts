// Whether a request reached the prototypes of the server's process (the test servers run in the
// test's own process): the own property names of the prototypes a JSON key could reach.
const prototypes = [Object.prototype, Array.prototype, Map.prototype, Function.prototype];

/** The prototypes' own property names, sorted: compare a snapshot taken before requests with one after. */
export const prototypeNames = (): string[][] => prototypes.map((p) => Object.getOwnPropertyNames(p).sort());
