import * as z from '../../config/zod.js';
import { configSchema } from '../../config/schema.js';
import { CONFIG_KEY_DOCS, CONFIG_SECTIONS, type ConfigKey, type SectionId } from '../../config/descriptions.js';

/**
 * config.json's keys as the documentation lists them: the type and default read from the schema
 * (so they cannot disagree with what the agent accepts), the meaning from the descriptions
 * table. Texts are Markdown-light (backticks), as the docs table and the man page both take them.
 */
export interface KeyRow {
  readonly key: ConfigKey;
  readonly section: SectionId;
  readonly type: string;
  readonly default: string;
  readonly meaning: string;
}

interface JsonSchemaProperty {
  type?: string;
  enum?: readonly unknown[];
  format?: string;
  minimum?: number;
  maximum?: number;
  items?: JsonSchemaProperty;
}

/** The smallest valid configuration: what the schema fills in beyond it are the defaults. */
const MINIMAL = { agid: 'a', base_url: 'http://localhost/api/v1', token: 't' } as const;

function typeOf(p: JsonSchemaProperty): string {
  if (p.enum) return `one of ${p.enum.map((v) => `\`${String(v)}\``).join(', ')}`;
  const range = p.minimum !== undefined && p.maximum !== undefined ? ` ${p.minimum}..${p.maximum}` : '';
  switch (p.type) {
    case 'integer':
      return `integer${range}`;
    case 'number':
      return `number${range}`;
    case 'boolean':
      return 'boolean';
    case 'string':
      return p.format === 'uri' ? 'URL' : 'string';
    case 'array':
      return `array of ${p.items ? typeOf(p.items).replace(/^string$/, 'strings').replace(/^URL$/, 'URLs') : 'values'}`;
    default:
      throw new Error(`config key of a type the documentation cannot name: ${JSON.stringify(p)}`);
  }
}

function showDefault(value: unknown): string {
  return `\`${typeof value === 'string' ? value : JSON.stringify(value)}\``;
}

/** Every config.json key, section by section, in the descriptions table's order. */
export function configKeyRows(): KeyRow[] {
  const schema = z.toJSONSchema(configSchema, { io: 'input', unrepresentable: 'any' }) as { properties: Record<string, JsonSchemaProperty> };
  const defaults = configSchema.parse(MINIMAL) as Record<string, unknown>;
  const rows: KeyRow[] = [];
  for (const [key, doc] of Object.entries(CONFIG_KEY_DOCS) as [ConfigKey, (typeof CONFIG_KEY_DOCS)[ConfigKey]][]) {
    const property = schema.properties[key];
    if (!property) throw new Error(`${key}: described but not in the config schema`);
    const hasDefault = !(key in MINIMAL) && defaults[key] !== undefined;
    const absent = 'absent' in doc ? doc.absent : undefined;
    if (hasDefault === (absent !== undefined)) {
      throw new Error(`${key}: ${hasDefault ? 'has a default in the schema and an `absent` text' : 'has neither a default in the schema nor an `absent` text'}`);
    }
    rows.push({ key, section: doc.section, type: typeOf(property), default: hasDefault ? showDefault(defaults[key]) : absent!, meaning: doc.meaning });
  }
  const order = Object.keys(CONFIG_SECTIONS);
  return rows.sort((a, b) => order.indexOf(a.section) - order.indexOf(b.section));
}

export { CONFIG_SECTIONS };
