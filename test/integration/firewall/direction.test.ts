import { IpsetPlugin } from '../../../src/firewall/ipset/plugin.js';
import { NftablesPlugin } from '../../../src/firewall/nft/plugin.js';
import { IptablesPlugin } from '../../../src/firewall/xtables/plugin.js';
import { DIRECTIONS } from '../../../src/firewall/direction.js';
import { directionSuite, type DirectionBackend } from './direction.js';

const backends: DirectionBackend[] = [
  { title: 'nftables', create: (o) => new NftablesPlugin(o), hitAddress: (address) => address },
  { title: 'ipset', create: (o) => new IpsetPlugin(o), hitAddress: (address) => address },
  // One rule per entry: the hit is counted on the entry that matched.
  { title: 'iptables', create: (o) => new IptablesPlugin(o), hitAddress: (_address, entry) => entry },
];

for (const b of backends) for (const d of DIRECTIONS) directionSuite(b, d);
