package mru

// Cache keeps at most Max values, most recently used first; lookups are
// linear, which beats a map for the handful of entries it is meant for. The
// zero value is not usable: set Max. A Cache is not safe for concurrent use.
type Cache[K comparable, V any] struct {
	// Max is the number of entries kept; the least recently used one is
	// dropped when a new key would exceed it. It must be at least 1.
	Max  int
	keys []K
	vals []V
}

// Get returns the value of k, building it with build (and caching it) when
// it is absent. An error from build is returned and nothing is cached.
func (c *Cache[K, V]) Get(k K, build func() (V, error)) (V, error) {
	for i, kk := range c.keys {
		if kk == k {
			v := c.vals[i]
			copy(c.keys[1:i+1], c.keys[:i])
			copy(c.vals[1:i+1], c.vals[:i])
			c.keys[0], c.vals[0] = k, v
			return v, nil
		}
	}
	v, err := build()
	if err != nil {
		return v, err
	}
	if len(c.keys) < max(c.Max, 1) {
		var zk K
		var zv V
		c.keys = append(c.keys, zk)
		c.vals = append(c.vals, zv)
	}
	copy(c.keys[1:], c.keys)
	copy(c.vals[1:], c.vals)
	c.keys[0], c.vals[0] = k, v
	return v, nil
}

// Len returns the number of cached entries.
func (c *Cache[K, V]) Len() int { return len(c.keys) }

// Each calls f for every cached entry, most recently used first.
func (c *Cache[K, V]) Each(f func(k K, v V)) {
	for i, k := range c.keys {
		f(k, c.vals[i])
	}
}
