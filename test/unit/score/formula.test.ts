import { existsSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { builtinScore } from '../../../src/score/decay.js';
import { parseFormula, type FnName, type Node, type ScoreFn } from '../../../src/score/formula.js';

const EVAL_TEXT = 'scoreTimeZero / (1 + Math.exp((3 / scoreTimeZero) * (current_time / 3600 - 2.5 * scoreTimeZero)))';
const PYTHON_TEXT = 'scoreTimeZero / (1 + math.exp((3 / scoreTimeZero) * (current_time / 3600 - 2.5 * scoreTimeZero)))';

function fnOf(text: string): ScoreFn {
  const r = parseFormula(text);
  if (!r.ok) throw new Error(`expected ${JSON.stringify(text)} to parse: ${r.error}`);
  return r.fn;
}
const val = (text: string, S = 0, t = 0): number => fnOf(text)(S, t);
const relClose = (a: number, b: number, rel: number): boolean => a === b || Math.abs(a - b) <= rel * Math.max(Math.abs(a), Math.abs(b));

describe('parseFormula: the spec formula texts', () => {
  for (const [name, text] of [['eval', EVAL_TEXT], ['exec_python', PYTHON_TEXT], ['python with **', 'scoreTimeZero / (1 + math.e ** ((3 / scoreTimeZero) * (current_time / 3600 - 2.5 * scoreTimeZero)))']] as const) {
    it(`${name} equals the built-in to 1e-12 on many points`, () => {
      const fn = fnOf(text);
      for (const S of [0.01, 0.1, 0.5, 1, 2, 3, 4.2, 5, 7.5, 10, 50, 100]) {
        for (let t = 0; t <= 120 * 86_400; t += 1337) {
          const a = fn(S, t);
          const b = builtinScore(S, t);
          if (!relClose(a, b, 1e-12)) expect.fail(`S=${S} t=${t}: ${a} vs ${b}`);
        }
      }
    });
  }
});

describe('parseFormula: grammar', () => {
  it.each([
    ['2**3**2', 512], ['2^3^2', 512], ['-2**2', -4], ['(-2)**2', 4], ['2^3', 8], ['(1+2)*3', 9], ['1+2*3', 7],
    ['2**-1', 0.5], ['-2^-2', -0.25], ['10-4-3', 3], ['64/4/2', 8], ['2*3**2', 18], ['--3', 3], ['+-+3', -3],
    ['- 2 ** 2 * 3', -12], ['1e-3', 0.001], ['.5', 0.5], ['1.', 1], ['2.5E+2', 250], ['1.e1', 10], [' \t\n1\r\n+ 1 ', 2],
    ['exp(0)', 1], ['Math.exp(1)', Math.E], ['math.exp(2)', Math.exp(2)], ['log(e)', 1], ['Math.log(Math.E)', 1],
    ['math.log(math.e**3)', 3], ['min(3, 1, 2)', 1], ['Math.max(3, 1, 2)', 3], ['math.min(4,5)', 4], ['max(7)', 7],
    ['abs(-3)', 3], ['Math.abs(3)', 3], ['pow(2, 10)', 1024], ['Math.pow(9, 0.5)', 3], ['math.pow(2,-2)', 0.25],
    ['pi', Math.PI], ['Math.PI', Math.PI], ['math.pi', Math.PI], ['Math.E', Math.E], ['math.e', Math.E], ['e', Math.E],
    ['-exp(0)**2', -1], ['exp(1)**2', Math.exp(1) ** 2],
  ])('%s = %d', (text, expected) => {
    expect(val(text)).toBeCloseTo(expected, 12);
  });

  it('reads the two variables', () => {
    expect(val('scoreTimeZero', 3, 7)).toBe(3);
    expect(val('current_time', 3, 7)).toBe(7);
    expect(val('scoreTimeZero * 10 + current_time', 3, 7)).toBe(37);
  });

  it('produces the expected AST shape (power binds tighter than unary minus)', () => {
    const r = parseFormula('-2**3**2');
    expect(r.ok && r.ast).toEqual({
      type: 'neg',
      arg: { type: 'bin', op: '**', left: { type: 'num', value: 2 }, right: { type: 'bin', op: '**', left: { type: 'num', value: 3 }, right: { type: 'num', value: 2 } } },
    });
  });

  it('accepts the caps exactly and rejects beyond them', () => {
    expect(parseFormula(`${'('.repeat(30)}1${')'.repeat(30)}`).ok).toBe(true);
    const deep = parseFormula(`${'('.repeat(40)}1${')'.repeat(40)}`);
    expect(deep).toMatchObject({ ok: false, error: expect.stringMatching(/nested deeper than 32/) });
    expect(parseFormula('-'.repeat(40) + '1')).toMatchObject({ ok: false, error: expect.stringMatching(/nested/) });
    expect(parseFormula('1+'.repeat(127) + '1').ok).toBe(true); // 255 nodes
    expect(parseFormula('1+'.repeat(128) + '1')).toMatchObject({ ok: false, error: expect.stringMatching(/more than 256 nodes/) });
    expect(parseFormula(' '.repeat(511) + '1').ok).toBe(true);
    expect(parseFormula(' '.repeat(512) + '1')).toMatchObject({ ok: false, error: expect.stringMatching(/longer than 512/) });
  });
});

describe('parseFormula: hostile and malformed text', () => {
  const marker = join(tmpdir(), `wcf-score-formula-${process.pid}`);
  afterEach(() => { rmSync(marker, { force: true }); vi.restoreAllMocks(); });

  it.each([
    'process.exit(1)',
    `require('child_process').execSync('touch ${marker}')`,
    `__import__('os').system('touch ${marker}')`,
    "constructor.constructor('return process')()",
    'scoreTimeZero.constructor',
    'current_time.toString()',
    'this', 'globalThis', 'window', 'Math', 'math', 'Math.random()', 'Math.exp', 'Math.exp.call(null, 1)', 'Math .exp(1)', 'Math.sqrt(4)',
    '__proto__', 'toString', 'valueOf', 'hasOwnProperty(1)', 'Function', 'eval(1)', 'import(1)',
    '[].map', '[1]', '{}', '"a"', "'a'", '`${process.exit(1)}`', '`a`', 'a=1', 'scoreTimeZero = 1', '1;2', '1;', ';',
    '1,2', '(1,2)', 'exp(1,2)', 'pow(1)', 'min()', 'exp()', 'exp', 'exp 1', '2(3)', 'scoreTimeZero(1)', '(1)(2)', '2 3',
    'x', 'foo(1)', 'scoretimezero', 'Current_time', 'E', 'PI', 'Math.e', 'math.E', 'Infinity', 'NaN', 'undefined', 'null',
    '1e999', '2e', '1.5.3', '1..2', '1_000', '0x10', '1 // 2', '7 % 2', '1 ? 2 : 3', '1 < 2', '!1', '~1', '1 & 2', '1 | 2',
    '1 +', '(1', '1)', '()', '', '   ', '+', '*1', '1 ** ** 2', 'lambda: 1', 'a.b.c', '\u00e9', '1 + \u{1F600}', '\0',
  ])('rejects %j', (text) => {
    const exit = vi.spyOn(process, 'exit').mockImplementation((() => undefined) as never);
    const r = parseFormula(text);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.error).toMatch(/position \d+|empty|longer/);
    expect(exit).not.toHaveBeenCalled();
    expect(existsSync(marker)).toBe(false);
  });

  it('reports where the problem is', () => {
    expect(parseFormula('scoreTimeZero + process.exit(1)')).toEqual({ ok: false, error: 'unknown name "process.exit" at position 16' });
    expect(parseFormula('1 + [2]')).toEqual({ ok: false, error: 'unexpected character "[" at position 4' });
    expect(parseFormula('(1 + 2')).toEqual({ ok: false, error: 'expected ")" at position 6' });
  });

  it('rejects very long text and 10,000 nested parentheses without overflowing the stack', () => {
    expect(parseFormula('1+'.repeat(100_000) + '1').ok).toBe(false);
    expect(parseFormula(`${'('.repeat(10_000)}1${')'.repeat(10_000)}`).ok).toBe(false);
    expect(parseFormula('-'.repeat(10_000) + '1').ok).toBe(false);
    expect(parseFormula('2**'.repeat(10_000) + '2').ok).toBe(false);
  });

  it('never throws on random input', () => {
    const pieces = ['(', ')', '-', '+', '*', '**', '^', '/', ',', ' ', '.', '1', '2.5', '.5', '1e3', '0', 'e', 'pi', 'x',
      'exp', 'Math.exp', 'math.log', 'min', 'max', 'abs', 'pow', 'scoreTimeZero', 'current_time', '[', '"', ';'];
    const formulaish = fc.array(fc.constantFrom(...pieces), { maxLength: 60 }).map((a) => a.join(''));
    fc.assert(fc.property(fc.oneof(fc.string({ maxLength: 600 }), fc.string({ unit: 'binary', maxLength: 100 }), formulaish), fc.double(), fc.double(), (text, S, t) => {
      const r = parseFormula(text);
      expect(typeof r.ok).toBe('boolean');
      if (r.ok) expect(typeof r.fn(S, t)).toBe('number');
      else expect(typeof r.error).toBe('string');
    }), { numRuns: 3000 });
  });
});

describe('parseFormula: round trip of random ASTs', () => {
  // Reference evaluator, independent of the module's compiler.
  function evaluate(n: Node, S: number, t: number): number {
    switch (n.type) {
      case 'num': return n.value;
      case 'var': return n.name === 'scoreTimeZero' ? S : t;
      case 'neg': return -evaluate(n.arg, S, t);
      case 'bin': {
        const a = evaluate(n.left, S, t), b = evaluate(n.right, S, t);
        return n.op === '+' ? a + b : n.op === '-' ? a - b : n.op === '*' ? a * b : n.op === '/' ? a / b : a ** b;
      }
      case 'call': {
        const xs = n.args.map((a) => evaluate(a, S, t));
        const f: Record<FnName, (...x: number[]) => number> = { exp: Math.exp, log: Math.log, abs: Math.abs, pow: Math.pow, min: Math.min, max: Math.max };
        return f[n.fn](...xs);
      }
    }
  }

  // Printer with minimal parentheses, so precedence and associativity are exercised.
  // Levels: 1 additive, 2 multiplicative, 3 unary, 4 power, 5 atom.
  type Style = { pow: string; prefix: string };
  function level(n: Node): number {
    return n.type === 'bin' ? (n.op === '+' || n.op === '-' ? 1 : n.op === '**' ? 4 : 2) : n.type === 'neg' ? 3 : 5;
  }
  function print(n: Node, st: Style): string {
    const wrap = (c: Node, min: number): string => (level(c) >= min ? print(c, st) : `(${print(c, st)})`);
    switch (n.type) {
      case 'num': return String(n.value).replace(/^0\./, '.');
      case 'var': return n.name;
      case 'neg': return `-${wrap(n.arg, 3)}`;
      case 'bin': {
        if (n.op === '**') return `${wrap(n.left, 5)} ${st.pow} ${wrap(n.right, 3)}`;
        const l = n.op === '+' || n.op === '-' ? 1 : 2;
        return `${wrap(n.left, l)} ${n.op} ${wrap(n.right, l + 1)}`;
      }
      case 'call': return `${st.prefix}${n.fn}(${n.args.map((a) => print(a, st)).join(', ')})`;
    }
  }

  const num = fc.oneof(fc.integer({ min: 0, max: 20 }), fc.double({ min: 0, max: 1e6, noNaN: true }), fc.constantFrom(0.5, 1e-7, 2.5e21))
    .map((value): Node => ({ type: 'num', value }));
  const variable = fc.constantFrom<Node>({ type: 'var', name: 'scoreTimeZero' }, { type: 'var', name: 'current_time' });
  const { node } = fc.letrec<{ node: Node }>((tie) => ({
    node: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      num, variable,
      tie('node').map((arg): Node => ({ type: 'neg', arg })),
      fc.tuple(fc.constantFrom('+', '-', '*', '/', '**'), tie('node'), tie('node')).map(([op, left, right]): Node => ({ type: 'bin', op: op as '+', left, right })),
      fc.tuple(fc.constantFrom('exp', 'log', 'abs'), tie('node')).map(([fn, a]): Node => ({ type: 'call', fn: fn as FnName, args: [a] })),
      fc.tuple(fc.constantFrom('pow', 'min', 'max'), tie('node'), tie('node')).map(([fn, a, b]): Node => ({ type: 'call', fn: fn as FnName, args: [a, b] })),
    ),
  }));

  it('parses back to the same AST and evaluates like the reference evaluator', () => {
    const style = fc.record({ pow: fc.constantFrom('**', '^'), prefix: fc.constantFrom('', 'Math.', 'math.') });
    fc.assert(fc.property(node, style, fc.double({ min: 0, max: 100, noNaN: true }), fc.double({ min: 0, max: 1e7, noNaN: true }), (ast, st, S, t) => {
      const text = print(ast, st);
      fc.pre(text.length <= 512);
      const r = parseFormula(text);
      if (!r.ok) throw new Error(`${text}: ${r.error}`);
      expect(r.ast).toEqual(ast);
      expect(r.fn(S, t)).toBe(evaluate(ast, S, t));
    }), { numRuns: 2000 });
  });
});

describe('no dynamic code in src/score', () => {
  it.each(['formula.ts', 'decay.ts', 'expiry.ts'])('%s has no eval / Function / vm / dynamic import', (file) => {
    const src = readFileSync(new URL(`../../../src/score/${file}`, import.meta.url), 'utf8').replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, '');
    expect(src).not.toMatch(/\beval\s*\(|\bFunction\s*\(|node:vm|['"]vm['"]|\bimport\s*\(|\bsetTimeout\b|\bsetInterval\b|\brequire\s*\(/);
  });
});
