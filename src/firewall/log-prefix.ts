/** How the agent's rules log blocked packets, shared by the nft and iptables rule text. */

export const LOG_PREFIX = 'wcf-agent: ';
/** Rate limit for logging blocked packets: a flood must not flood the journal. */
export const LOG_LIMIT_PER_MINUTE = 10;
