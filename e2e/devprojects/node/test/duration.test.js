'use strict';

const assert = require('node:assert/strict');
const { parse, format } = require('../lib/duration');

describe('parse', () => {
  it('reads single units', () => {
    assert.equal(parse('250ms'), 250);
    assert.equal(parse('3s'), 3000);
    assert.equal(parse('2m'), 120000);
    assert.equal(parse('1h'), 3600000);
    assert.equal(parse('1d'), 86400000);
  });

  it('adds up compound durations', () => {
    assert.equal(parse('1h30m'), 5400000);
    assert.equal(parse('1m30.5s'), 90500);
    assert.equal(parse('1d2h3m4s5ms'), 93784005);
  });

  it('keeps a leading minus', () => {
    assert.equal(parse('-90s'), -90000);
  });

  it('refuses what is not a duration', () => {
    assert.throws(() => parse(''), TypeError);
    assert.throws(() => parse(42), TypeError);
    assert.throws(() => parse('10 minutes'), SyntaxError);
    assert.throws(() => parse('5x'), /at offset 0/);
  });
});

describe('format', () => {
  it('writes the shortest form', () => {
    assert.equal(format(0), '0s');
    assert.equal(format(250), '250ms');
    assert.equal(format(5400000), '1h30m');
    assert.equal(format(-90000), '-1m30s');
  });

  it('round-trips through parse', () => {
    for (const ms of [1, 999, 1000, 61001, 3599999, 86400000 * 3 + 7]) {
      assert.equal(parse(format(ms)), ms);
    }
  });

  it('refuses what is not finite', () => {
    assert.throws(() => format(Infinity), RangeError);
    assert.throws(() => format(NaN), RangeError);
  });
});
