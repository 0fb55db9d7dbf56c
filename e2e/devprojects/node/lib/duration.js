'use strict';

// Durations written the way people write them in config files: "1h30m",
// "250ms", "2d", "1m30.5s". parse turns one into milliseconds; format turns
// milliseconds back into the shortest such string.

const UNITS = [
  ['d', 86400000],
  ['h', 3600000],
  ['m', 60000],
  ['s', 1000],
  ['ms', 1],
];

const PART = /(\d+(?:\.\d+)?)(ms|d|h|m|s)/y;

function parse(text) {
  if (typeof text !== 'string' || text.trim() === '') {
    throw new TypeError('a duration is a non-empty string');
  }
  let s = text.trim();
  let sign = 1;
  if (s[0] === '-') {
    sign = -1;
    s = s.slice(1);
  }
  let total = 0;
  PART.lastIndex = 0;
  while (PART.lastIndex < s.length) {
    const at = PART.lastIndex;
    const m = PART.exec(s);
    if (!m) {
      throw new SyntaxError(`bad duration ${JSON.stringify(text)} at offset ${at}`);
    }
    const unit = UNITS.find(([name]) => name === m[2]);
    total += Number(m[1]) * unit[1];
  }
  return sign * Math.round(total);
}

function format(ms) {
  if (!Number.isFinite(ms)) {
    throw new RangeError('a duration is a finite number of milliseconds');
  }
  if (ms === 0) {
    return '0s';
  }
  let rest = Math.abs(Math.round(ms));
  let out = ms < 0 ? '-' : '';
  for (const [name, size] of UNITS) {
    if (rest >= size) {
      out += Math.floor(rest / size) + name;
      rest %= size;
    }
  }
  return out;
}

module.exports = { parse, format };
