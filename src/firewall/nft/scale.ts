/**
 * Where an nftables set of the agent's size starts to hurt the host. With the
 * agent's set in place, every other nft command that lists anything (`nft list
 * ruleset`, `nft list tables`, firewalld's and an admin's reads) makes nft
 * 1.0.x fetch every element first, at a cost that grows faster than the size:
 * measured on 2 cores (docs/nftables-at-scale.md) about a second at 100,000
 * entries, and more than a minute (and 650 MB in that nft) at a million. The
 * agent's own cycles stay fast either way (it never lists its set unless in
 * doubt); the cost is the other tools'. Past this many entries (maximum_rules)
 * `auto` picks ipset when it is usable, and doctor and check-config warn about
 * an explicit `plugin: nftables`.
 */
export const NFT_SLOW_ENTRIES = 250_000;

/** The warning for a configured nftables backend sized past NFT_SLOW_ENTRIES; undefined below it. */
export function nftScaleWarning(maximumRules: number): string | undefined {
  if (maximumRules <= NFT_SLOW_ENTRIES) return undefined;
  return (
    `maximum_rules: ${maximumRules} entries in an nftables set make every other nft listing on this host slow ` +
    `(nft fetches every element: over a minute and hundreds of MB at a million); past ${NFT_SLOW_ENTRIES} prefer plugin ipset (auto does)`
  );
}
