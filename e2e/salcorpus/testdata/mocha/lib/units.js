'use strict';

// Factors to the base unit of each dimension.
const FACTORS = {
  length: { um: 0.000001, mm: 0.001, cm: 0.01, m: 1, km: 1000, in: 0.0254, ft: 0.3048, yd: 0.9144, mi: 1609.344, nmi: 1852 },
  mass: { mg: 0.000001, g: 0.001, kg: 1, t: 1000, oz: 0.028349523125, lb: 0.45359237 },
  time: { ms: 0.001, s: 1, min: 60, h: 3600, d: 86400, wk: 604800 },
  data: { B: 1, KB: 1000, MB: 1e6, GB: 1e9, KiB: 1024, MiB: 1048576, GiB: 1073741824 },
};

function dimensionOf(unit) {
  for (const [dim, table] of Object.entries(FACTORS)) {
    if (Object.prototype.hasOwnProperty.call(table, unit)) return dim;
  }
  throw new RangeError(`unknown unit ${JSON.stringify(unit)}`);
}

function convert(value, from, to) {
  const a = dimensionOf(from);
  const b = dimensionOf(to);
  if (a !== b) throw new TypeError(`cannot convert ${a} to ${b}`);
  return (value * FACTORS[a][from]) / FACTORS[b][to];
}

function round(x, digits) {
  const p = 10 ** digits;
  return Math.round(x * p) / p;
}

module.exports = { FACTORS, dimensionOf, convert, round };
