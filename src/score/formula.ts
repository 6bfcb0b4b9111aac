/**
 * The feed header's decay formula (`eval`, `exec_python`) is untrusted text. It is read here by a
 * hand-written tokenizer and recursive-descent parser for a whitelisted arithmetic grammar, then
 * compiled into a tree of plain closures. Nothing is ever evaluated as code (no eval, Function, vm).
 *
 *   expr    := term (('+' | '-') term)*
 *   term    := unary (('*' | '/') unary)*
 *   unary   := ('-' | '+') unary | power
 *   power   := primary (('**' | '^') unary)?          right-associative, binds tighter than unary minus
 *   primary := number | variable | constant | function '(' expr (',' expr)* ')' | '(' expr ')'
 */

export type ScoreFn = (S: number, t: number) => number;
export type VarName = 'scoreTimeZero' | 'current_time';
export type BinOp = '+' | '-' | '*' | '/' | '**';
export type FnName = 'exp' | 'log' | 'min' | 'max' | 'abs' | 'pow';
export type Node =
  | { readonly type: 'num'; readonly value: number }
  | { readonly type: 'var'; readonly name: VarName }
  | { readonly type: 'neg'; readonly arg: Node }
  | { readonly type: 'bin'; readonly op: BinOp; readonly left: Node; readonly right: Node }
  | { readonly type: 'call'; readonly fn: FnName; readonly args: readonly Node[] };
export type FormulaResult = { ok: true; fn: ScoreFn; ast: Node } | { ok: false; error: string };

export const MAX_FORMULA_CHARS = 512;
export const MAX_FORMULA_DEPTH = 32;
export const MAX_FORMULA_NODES = 256;

// Maps (not plain objects) so that names like `constructor` or `__proto__` can never match.
const VARS = new Set<string>(['scoreTimeZero', 'current_time']);
const CONSTS = new Map<string, number>([
  ['e', Math.E], ['Math.E', Math.E], ['math.e', Math.E], ['pi', Math.PI], ['Math.PI', Math.PI], ['math.pi', Math.PI],
]);
const FUNCS = new Map<string, { fn: FnName; min: number; max: number }>();
for (const [fn, min, max] of [['exp', 1, 1], ['log', 1, 1], ['abs', 1, 1], ['pow', 2, 2], ['min', 1, 16], ['max', 1, 16]] as const) {
  for (const prefix of ['', 'Math.', 'math.']) FUNCS.set(prefix + fn, { fn, min, max });
}

class ParseError extends Error {}
const show = (s: string): string => JSON.stringify(s.length > 32 ? `${s.slice(0, 32)}...` : s);

/** A lexical error becomes an 'err' token, thrown only when the parser reaches it: the first error in the text wins. */
type Tok = { readonly kind: 'num' | 'id' | 'op' | 'end' | 'err'; readonly text: string; readonly pos: number };
const NUM_RE = /(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?/y;
const ID_RE = /[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*/y;
const OPS = ['**', '*', '/', '+', '-', '^', '(', ')', ','];

function tokenize(text: string): Tok[] {
  const toks: Tok[] = [];
  let i = 0;
  const fail = (error: string): Tok[] => { toks.push({ kind: 'err', text: error, pos: i }); return toks; };
  while (i < text.length) {
    const c = text[i]!;
    if (c === ' ' || c === '\t' || c === '\n' || c === '\r') { i++; continue; }
    const re = /[0-9.]/.test(c) ? NUM_RE : /[A-Za-z_]/.test(c) ? ID_RE : undefined;
    if (re) {
      re.lastIndex = i;
      const m = re.exec(text);
      if (m) {
        if (re === NUM_RE && /[A-Za-z0-9_.]/.test(text[re.lastIndex] ?? '')) return fail(`malformed number at position ${i}`);
        toks.push({ kind: re === NUM_RE ? 'num' : 'id', text: m[0], pos: i });
        i = re.lastIndex;
        continue;
      }
    }
    const op = OPS.find((o) => text.startsWith(o, i));
    if (!op) return fail(`unexpected character ${show(String.fromCodePoint(text.codePointAt(i)!))} at position ${i}`);
    toks.push({ kind: 'op', text: op, pos: i });
    i += op.length;
  }
  toks.push({ kind: 'end', text: '', pos: text.length });
  return toks;
}

class Parser {
  private i = 0;
  private depth = 0;
  private nodes = 0;
  constructor(private readonly toks: Tok[]) {}

  parse(): Node {
    const n = this.expr();
    const tk = this.peek();
    if (tk.kind !== 'end') throw new ParseError(`unexpected ${show(tk.text)} at position ${tk.pos}`);
    return n;
  }
  private peek(): Tok {
    const tk = this.toks[this.i]!;
    if (tk.kind === 'err') throw new ParseError(tk.text);
    return tk;
  }
  private isOp(...ops: string[]): string | undefined {
    const tk = this.peek();
    return tk.kind === 'op' && ops.includes(tk.text) ? tk.text : undefined;
  }
  private expect(op: string): void {
    const tk = this.peek();
    if (tk.kind !== 'op' || tk.text !== op) throw new ParseError(`expected ${show(op)} at position ${tk.pos}`);
    this.i++;
  }
  private node(n: Node): Node {
    if (++this.nodes > MAX_FORMULA_NODES) throw new ParseError(`formula has more than ${MAX_FORMULA_NODES} nodes at position ${this.toks[this.i - 1]?.pos ?? 0}`);
    return n;
  }
  private expr(): Node {
    let left = this.term();
    for (let op; (op = this.isOp('+', '-')); ) { this.i++; left = this.node({ type: 'bin', op: op as BinOp, left, right: this.term() }); }
    return left;
  }
  private term(): Node {
    let left = this.unary();
    for (let op; (op = this.isOp('*', '/')); ) { this.i++; left = this.node({ type: 'bin', op: op as BinOp, left, right: this.unary() }); }
    return left;
  }
  private unary(): Node {
    // Every nesting (parenthesis, call argument, prefix sign, exponent) passes through here.
    if (++this.depth > MAX_FORMULA_DEPTH) throw new ParseError(`formula nested deeper than ${MAX_FORMULA_DEPTH} at position ${this.peek().pos}`);
    const sign = this.isOp('-', '+');
    if (sign) this.i++;
    const arg = sign ? this.unary() : this.power();
    this.depth--;
    return sign === '-' ? this.node({ type: 'neg', arg }) : arg;
  }
  private power(): Node {
    const base = this.primary();
    if (!this.isOp('**', '^')) return base;
    this.i++;
    return this.node({ type: 'bin', op: '**', left: base, right: this.unary() });
  }
  private primary(): Node {
    const tk = this.peek();
    this.i++;
    if (tk.kind === 'num') {
      const value = Number(tk.text);
      if (!Number.isFinite(value)) throw new ParseError(`number out of range at position ${tk.pos}`);
      return this.node({ type: 'num', value });
    }
    if (tk.kind === 'id') {
      if (VARS.has(tk.text)) return this.node({ type: 'var', name: tk.text as VarName });
      const k = CONSTS.get(tk.text);
      if (k !== undefined) return this.node({ type: 'num', value: k });
      const f = FUNCS.get(tk.text);
      if (!f) throw new ParseError(`unknown name ${show(tk.text)} at position ${tk.pos}`);
      this.expect('(');
      const args = [this.expr()];
      while (this.isOp(',')) { this.i++; args.push(this.expr()); }
      this.expect(')');
      if (args.length < f.min || args.length > f.max) throw new ParseError(`wrong number of arguments to ${tk.text} at position ${tk.pos}`);
      return this.node({ type: 'call', fn: f.fn, args });
    }
    if (tk.kind === 'op' && tk.text === '(') {
      const inner = this.expr();
      this.expect(')');
      return inner;
    }
    throw new ParseError(tk.kind === 'end' ? `unexpected end of formula at position ${tk.pos}` : `unexpected ${show(tk.text)} at position ${tk.pos}`);
  }
}

/** A compiled node; `k` is set when the subtree has no variables (folded to a constant). */
type Compiled = { readonly f: ScoreFn; readonly k: number | undefined };

function compile(n: Node): Compiled {
  let f: ScoreFn;
  let parts: Compiled[];
  switch (n.type) {
    case 'num': { const v = n.value; return { f: () => v, k: v }; }
    case 'var': return { f: n.name === 'scoreTimeZero' ? (S) => S : (_S, t) => t, k: undefined };
    case 'neg': { parts = [compile(n.arg)]; const a = parts[0]!.f; f = (S, t) => -a(S, t); break; }
    case 'bin': {
      parts = [compile(n.left), compile(n.right)];
      const a = parts[0]!.f, b = parts[1]!.f;
      f = n.op === '+' ? (S, t) => a(S, t) + b(S, t)
        : n.op === '-' ? (S, t) => a(S, t) - b(S, t)
        : n.op === '*' ? (S, t) => a(S, t) * b(S, t)
        : n.op === '/' ? (S, t) => a(S, t) / b(S, t)
        : (S, t) => Math.pow(a(S, t), b(S, t));
      break;
    }
    case 'call': {
      parts = n.args.map(compile);
      const a = parts[0]!.f, b = parts[1]?.f ?? a, all = parts.map((p) => p.f);
      const pick = n.fn === 'min' ? Math.min : Math.max;
      f = n.fn === 'exp' ? (S, t) => Math.exp(a(S, t))
        : n.fn === 'log' ? (S, t) => Math.log(a(S, t))
        : n.fn === 'abs' ? (S, t) => Math.abs(a(S, t))
        : n.fn === 'pow' ? (S, t) => Math.pow(a(S, t), b(S, t))
        : all.length === 2 ? (S, t) => pick(a(S, t), b(S, t))
        : (S, t) => { let r = a(S, t); for (let j = 1; j < all.length; j++) r = pick(r, all[j]!(S, t)); return r; };
      break;
    }
  }
  if (parts.some((p) => p.k === undefined)) return { f, k: undefined };
  const v = f(0, 0);
  return { f: () => v, k: v };
}

/** Parses and compiles a formula over `scoreTimeZero` (S) and `current_time` (t). Never throws. */
export function parseFormula(text: string): FormulaResult {
  try {
    if (typeof text !== 'string') return { ok: false, error: 'formula is not a string' };
    if (text.length > MAX_FORMULA_CHARS) return { ok: false, error: `formula longer than ${MAX_FORMULA_CHARS} characters` };
    if (text.trim() === '') return { ok: false, error: 'empty formula' };
    const ast = new Parser(tokenize(text)).parse();
    return { ok: true, fn: compile(ast).f, ast };
  } catch (err) {
    return { ok: false, error: err instanceof ParseError ? err.message : `formula rejected: ${String(err)}` };
  }
}
