/**
 * Schema-driven reader for the protobuf text format, walking the generated
 * descriptors. It accepts and refuses what Triton's C++ TextFormat parser
 * (TextFormat::ParseFromString, which Triton calls) accepts and refuses —
 * docs/protocol-notes.md, "Model configuration text format", and the cases in test/config/parse.test.ts, each
 * checked against tritonserver 2.51 — and reports errors as
 * `file:line:column: message`, with the C++ wording where the rule is the
 * C++ parser's (duplicate fields, oneofs, unknown names).
 *
 * Why not `txtpb.fromText` from @bufbuild/protobuf: its errors carry no
 * position, and its duplicate-field rule is protobuf-go's (any second
 * occurrence of a singular field fails), while the C++ rule asks whether the
 * field is already *present*: `max_batch_size: 0` followed by
 * `max_batch_size: 4` loads in Triton (an implicit-presence zero is not
 * present) and fromText refuses it. See docs/design.md, "config.pbtxt".
 * The test suite cross-checks this reader against fromText on every input
 * both accept.
 */
import { ScalarType, type DescField, type DescMessage, type MessageShape } from '@bufbuild/protobuf';
import { reflect, type ReflectMessage } from '@bufbuild/protobuf/reflect';
import { Errors } from '../errors.js';
import type { SyntaxEntry } from '../errors/config-syntax.js';
import { Lexer, LexError, describeToken, type SourcePosition, type Token } from './text-lexer.js';

export type { SourcePosition } from './text-lexer.js';

/**
 * Where each field was first written, keyed by path: `max_batch_size`,
 * `input[0].dims`, `instance_group[1].kind`, `parameters[EXECUTION_ENV_PATH].string_value`,
 * `dynamic_batching.priority_queue_policy[2]`.
 */
export type SourceMap = ReadonlyMap<string, SourcePosition>;

export interface TextParseResult<Desc extends DescMessage> {
  message: MessageShape<Desc>;
  positions: SourceMap;
}

// Same nesting cap as the C++ parser's default recursion limit.
const MAX_DEPTH = 100;

const INT32_MIN = -(2n ** 31n);
const INT32_MAX = 2n ** 31n - 1n;
const UINT32_MAX = 2n ** 32n - 1n;
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const UINT64_MAX = 2n ** 64n - 1n;

const utf8 = new TextDecoder('utf-8');

type ListField = DescField & { fieldKind: 'list' };
type MapField = DescField & { fieldKind: 'map' };

export function parseTextFormat<Desc extends DescMessage>(schema: Desc, text: string, file: string): TextParseResult<Desc> {
  const parser = new Parser(text, file);
  const root = reflect(schema);
  try {
    parser.readBody(root, 'eof', '', 0);
  } catch (e) {
    if (e instanceof LexError) {
      throw e.toConfigError({ file, line: e.line, column: e.column, field: parser.currentField });
    }
    throw e;
  }
  return { message: root.message as MessageShape<Desc>, positions: parser.positions };
}

class Parser {
  readonly positions = new Map<string, SourcePosition>();
  /** The field being read, for errors raised by the lexer. */
  currentField: string | undefined;
  private readonly lex: Lexer;

  constructor(
    text: string,
    private readonly file: string,
  ) {
    this.lex = new Lexer(text);
  }

  /** Throws the catalogue error `entry` (docs/errors.md) at `at`, naming the field being read. */
  private fail<A extends unknown[]>(at: SourcePosition, field: string | undefined, entry: SyntaxEntry<A>, ...args: A): never {
    // A map entry whose value precedes its key has only a provisional path (see readMap).
    const named = field?.replace(/\[#\d+@\d+:\d+\]/g, '[]');
    throw entry({ file: this.file, line: at.line, column: at.column, field: named }, ...args);
  }

  private record(path: string, at: SourcePosition): void {
    if (!this.positions.has(path)) this.positions.set(path, { line: at.line, column: at.column });
  }

  private isPunct(t: Token, p: string): boolean {
    return t.kind === 'punct' && t.text === p;
  }

  private tryConsume(p: string): boolean {
    if (this.isPunct(this.lex.peek(), p)) {
      this.lex.next();
      return true;
    }
    return false;
  }

  private consumeSeparator(): void {
    if (!this.tryConsume(';')) this.tryConsume(',');
  }

  /** Fields of one message until `close` ('}' / '>' for a block, 'eof' at top level). */
  readBody(msg: ReflectMessage, close: '}' | '>' | 'eof', path: string, depth: number): void {
    if (depth > MAX_DEPTH) this.fail(this.lex.peek(), path, Errors.syntaxDepth, MAX_DEPTH);
    for (;;) {
      const t = this.lex.peek();
      if (t.kind === 'eof') {
        if (close !== 'eof') this.fail(t, path || undefined, Errors.syntaxEnd, close);
        return;
      }
      if (close !== 'eof' && this.isPunct(t, close)) {
        this.lex.next();
        return;
      }
      this.readField(msg, path, depth);
      this.consumeSeparator();
    }
  }

  private readField(msg: ReflectMessage, parentPath: string, depth: number): void {
    const nameTok = this.lex.next();
    if (nameTok.kind !== 'ident') {
      if (this.isPunct(nameTok, '[')) {
        this.fail(nameTok, parentPath || undefined, Errors.syntaxExtension, msg.desc.typeName);
      }
      this.fail(nameTok, parentPath || undefined, Errors.syntaxFieldName, describeToken(nameTok));
    }
    const name = nameTok.text;
    const path = parentPath ? `${parentPath}.${name}` : name;
    const field = msg.desc.fields.find((f) => f.name === name);
    if (field === undefined) this.fail(nameTok, path, Errors.syntaxUnknownField, msg.desc.typeName, name);
    this.currentField = path;

    // The C++ rule (ParseFromString): a singular field that is already
    // present may not be given again — a proto3 scalar holding its zero value
    // is not present, a message or oneof member is present once written.
    // Checked before the oneof rule, as in C++, so a oneof member given twice
    // is "specified multiple times".
    if (field.fieldKind !== 'list' && field.fieldKind !== 'map' && msg.isSet(field)) {
      this.fail(nameTok, path, Errors.syntaxRepeatedTwice, name);
    }
    if (field.oneof !== undefined) {
      const setCase = msg.oneofCase(field.oneof);
      if (setCase !== undefined) {
        this.fail(nameTok, path, Errors.syntaxOneof, name, setCase.name, field.oneof.name);
      }
    }

    const messageLike = field.fieldKind === 'message' || field.fieldKind === 'map' || (field.fieldKind === 'list' && field.listKind === 'message');
    const hasColon = this.tryConsume(':');
    if (!messageLike && !hasColon) {
      this.fail(this.lex.peek(), path, Errors.syntaxColon, name, describeToken(this.lex.peek()));
    }

    switch (field.fieldKind) {
      case 'scalar':
      case 'enum': {
        this.record(path, nameTok);
        if (this.isPunct(this.lex.peek(), '[')) {
          this.fail(this.lex.peek(), path, Errors.syntaxNotRepeated, name, msg.desc.typeName);
        }
        msg.set(field, this.readSingleValue(field, path));
        return;
      }
      case 'message': {
        this.record(path, nameTok);
        // Never set before here: a second block is refused above.
        const sub = reflect(field.message);
        this.readMessageBlock(sub, path, depth);
        msg.set(field, sub);
        return;
      }
      case 'list':
        this.readList(msg, field, path, nameTok, depth);
        return;
      case 'map':
        this.readMap(msg, field, path, nameTok, depth);
        return;
    }
  }

  private readMessageBlock(sub: ReflectMessage, path: string, depth: number): void {
    const open = this.lex.next();
    if (this.isPunct(open, '{')) return this.readBody(sub, '}', path, depth + 1);
    if (this.isPunct(open, '<')) return this.readBody(sub, '>', path, depth + 1);
    this.fail(open, path, Errors.syntaxOpenMessage, sub.desc.typeName, describeToken(open));
  }

  /** `[a, b]` (possibly empty) or one element, calling `each` per element. */
  private readListSyntax(path: string, each: () => void): void {
    if (!this.tryConsume('[')) {
      each();
      return;
    }
    if (this.tryConsume(']')) return;
    for (;;) {
      each();
      const t = this.lex.next();
      if (this.isPunct(t, ']')) return;
      if (!this.isPunct(t, ',')) this.fail(t, path, Errors.syntaxListSeparator, describeToken(t));
    }
  }

  private readList(msg: ReflectMessage, field: ListField, path: string, nameTok: Token, depth: number): void {
    const list = msg.get(field);
    if (field.listKind === 'message') {
      this.readListSyntax(path, () => {
        const itemPath = `${path}[${list.size}]`;
        this.record(itemPath, this.lex.peek());
        const sub = reflect(field.message);
        this.readMessageBlock(sub, itemPath, depth);
        list.add(sub);
      });
      this.record(path, nameTok);
      return;
    }
    this.record(path, nameTok);
    this.readListSyntax(path, () => list.add(this.readSingleValue(field, path)));
  }

  private readMap(msg: ReflectMessage, field: MapField, path: string, nameTok: Token, depth: number): void {
    this.record(path, nameTok);
    const map = msg.get(field);
    this.readListSyntax(path, () => {
      const open = this.lex.next();
      const close = this.isPunct(open, '{') ? '}' : this.isPunct(open, '<') ? '>' : undefined;
      if (close === undefined) this.fail(open, path, Errors.syntaxOpenMapEntry, field.name, describeToken(open));
      // Nested positions are recorded under a provisional path until the key is known.
      const provisional = `${path}[#${map.size}@${open.line}:${open.column}]`;
      let key: unknown;
      let value: unknown;
      for (;;) {
        const t = this.lex.next();
        if (this.isPunct(t, close)) break;
        if (t.kind === 'eof') this.fail(t, path, Errors.syntaxEnd, close);
        if (t.kind !== 'ident' || (t.text !== 'key' && t.text !== 'value')) {
          if (t.kind !== 'ident') this.fail(t, path, Errors.syntaxMapMember, field.name, describeToken(t));
          this.fail(t, path, Errors.syntaxUnknownField, mapEntryTypeName(msg, field), t.text);
        }
        // A map entry is a message whose key and value have presence: each
        // may be written once, even with its zero value (as in C++).
        if ((t.text === 'key' ? key : value) !== undefined) {
          this.fail(t, path, Errors.syntaxRepeatedTwice, t.text);
        }
        if (t.text === 'key') {
          if (!this.tryConsume(':')) this.fail(this.lex.peek(), path, Errors.syntaxMapColon, 'key', field.name);
          key = this.readScalar(field.mapKey, `${path}.key`);
        } else if (field.mapKind === 'message') {
          this.tryConsume(':');
          const sub = reflect(field.message);
          // Usually the key came first and names the entry already.
          this.readMessageBlock(sub, key === undefined ? provisional : `${path}[${String(key)}]`, depth);
          value = sub;
        } else {
          if (!this.tryConsume(':')) this.fail(this.lex.peek(), path, Errors.syntaxMapColon, 'value', field.name);
          value = field.mapKind === 'enum' ? this.readEnum(field.enum, `${path}.value`) : this.readScalar(field.scalar, `${path}.value`);
        }
        this.consumeSeparator();
      }
      // A missing key or value takes its zero value, as in C++.
      key ??= zeroScalar(field.mapKey);
      value ??= field.mapKind === 'message' ? reflect(field.message) : field.mapKind === 'enum' ? 0 : zeroScalar(field.scalar);
      const entryPath = `${path}[${String(key)}]`;
      this.record(entryPath, open);
      for (const [p, pos] of [...this.positions]) {
        if (p === provisional || p.startsWith(provisional + '.') || p.startsWith(provisional + '[')) {
          this.positions.delete(p);
          this.record(entryPath + p.slice(provisional.length), pos);
        }
      }
      map.set(key, value);
    });
  }

  private readSingleValue(field: DescField, path: string): unknown {
    if (field.fieldKind === 'enum' || (field.fieldKind === 'list' && field.listKind === 'enum')) {
      return this.readEnum(field.enum, path);
    }
    if (field.fieldKind === 'scalar' || (field.fieldKind === 'list' && field.listKind === 'scalar')) {
      return this.readScalar(field.scalar, path);
    }
    throw new Error(`internal: readSingleValue on ${field.fieldKind} field ${path}`);
  }

  private readEnum(desc: NonNullable<DescField['enum']>, path: string): number {
    const neg = this.tryConsume('-');
    const t = this.lex.next();
    if (t.kind === 'ident' && !neg) {
      const v = desc.values.find((x) => x.name === t.text);
      if (v === undefined) {
        this.fail(t, path, Errors.syntaxEnumName, t.text, leaf(path));
      }
      return v.number;
    }
    if (t.kind === 'int') {
      // Proto3 enums are open: any int32 is kept, as the C++ parser does.
      const v = neg ? -t.value : t.value;
      if (v < INT32_MIN || v > INT32_MAX) this.fail(t, path, Errors.syntaxEnumRange, v, leaf(path));
      return Number(v);
    }
    this.fail(t, path, Errors.syntaxEnumToken, desc.typeName, leaf(path), describeToken(t));
  }

  private readScalar(type: ScalarType, path: string): unknown {
    const f = leaf(path);
    switch (type) {
      case ScalarType.STRING:
      case ScalarType.BYTES: {
        const t = this.lex.next();
        if (t.kind !== 'string') this.fail(t, path, Errors.syntaxString, f, describeToken(t));
        const parts = [t.bytes];
        // Adjacent literals concatenate, as in C.
        for (let n = this.lex.peek(); n.kind === 'string'; n = this.lex.peek()) parts.push((this.lex.next() as typeof t).bytes);
        const bytes = concat(parts);
        return type === ScalarType.BYTES ? bytes : utf8.decode(bytes);
      }
      case ScalarType.BOOL: {
        const t = this.lex.next();
        if (t.kind === 'ident') {
          if (t.text === 'true' || t.text === 'True' || t.text === 't') return true;
          if (t.text === 'false' || t.text === 'False' || t.text === 'f') return false;
        }
        if (t.kind === 'int' && (t.value === 0n || t.value === 1n)) return t.value === 1n;
        this.fail(t, path, Errors.syntaxBool, describeToken(t), f);
      }
      case ScalarType.FLOAT:
      case ScalarType.DOUBLE: {
        const neg = this.tryConsume('-');
        const t = this.lex.next();
        let v: number | undefined;
        if (t.kind === 'float') v = t.value;
        else if (t.kind === 'int') v = Number(t.value);
        else if (t.kind === 'ident') {
          const w = t.text.toLowerCase();
          if (w === 'inf' || w === 'infinity') v = Infinity;
          else if (w === 'nan') v = NaN;
        }
        if (v === undefined) this.fail(t, path, Errors.syntaxNumber, f, describeToken(t));
        return neg ? -v : v;
      }
      default: {
        const neg = this.tryConsume('-');
        const t = this.lex.next();
        if (t.kind !== 'int') {
          this.fail(t, path, Errors.syntaxInteger, f, `${neg ? "'-' " : ''}${describeToken(t)}`);
        }
        const v = neg ? -t.value : t.value;
        const [min, max, is64] = intRange(type);
        if (v < min || v > max) {
          this.fail(t, path, Errors.syntaxRange, v, ScalarType[type].toLowerCase(), f);
        }
        return is64 ? v : Number(v);
      }
    }
  }
}

function intRange(type: ScalarType): [bigint, bigint, boolean] {
  switch (type) {
    case ScalarType.INT32:
    case ScalarType.SINT32:
    case ScalarType.SFIXED32:
      return [INT32_MIN, INT32_MAX, false];
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
      return [0n, UINT32_MAX, false];
    case ScalarType.UINT64:
    case ScalarType.FIXED64:
      return [0n, UINT64_MAX, true];
    default:
      return [INT64_MIN, INT64_MAX, true];
  }
}

function zeroScalar(type: ScalarType): unknown {
  switch (type) {
    case ScalarType.STRING:
      return '';
    case ScalarType.BYTES:
      return new Uint8Array(0);
    case ScalarType.BOOL:
      return false;
    case ScalarType.INT64:
    case ScalarType.UINT64:
    case ScalarType.SINT64:
    case ScalarType.FIXED64:
    case ScalarType.SFIXED64:
      return 0n;
    default:
      return 0;
  }
}

function concat(parts: Uint8Array[]): Uint8Array {
  if (parts.length === 1) return parts[0]!;
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

/** The name protoc gives a map's synthetic entry message: `inference.ModelConfig.ParametersEntry`. */
function mapEntryTypeName(parent: ReflectMessage, field: MapField): string {
  const camel = field.name.replace(/(?:^|_)([a-z0-9])/g, (_m, c: string) => c.toUpperCase());
  return `${parent.desc.typeName}.${camel}Entry`;
}

function leaf(path: string): string {
  const dot = path.lastIndexOf('.');
  return (dot < 0 ? path : path.slice(dot + 1)).replace(/\[.*$/, '');
}
