package portico

// LogLimits bound a log query (eth_getLogs, the rollup's
// starknet_getEvents): the block range it may span, the addresses and
// topics it may name, and the logs its answer may hold. A network has
// them (config `logs:`), and a key may override them (docs/keys.md); 0
// means no bound of that kind.
type LogLimits struct {
	MaxBlockRange uint64 `yaml:"max_block_range" json:"max_block_range,omitempty"`
	MaxAddresses  int    `yaml:"max_addresses" json:"max_addresses,omitempty"`
	MaxTopics     int    `yaml:"max_topics" json:"max_topics,omitempty"`
	MaxLogs       int    `yaml:"max_logs" json:"max_logs,omitempty"`
}

// Over returns l with each bound that o sets (non-zero) taken from o: a
// key's own bounds over its network's.
func (l LogLimits) Over(o *LogLimits) LogLimits {
	if o == nil {
		return l
	}
	if o.MaxBlockRange != 0 {
		l.MaxBlockRange = o.MaxBlockRange
	}
	if o.MaxAddresses != 0 {
		l.MaxAddresses = o.MaxAddresses
	}
	if o.MaxTopics != 0 {
		l.MaxTopics = o.MaxTopics
	}
	if o.MaxLogs != 0 {
		l.MaxLogs = o.MaxLogs
	}
	return l
}
