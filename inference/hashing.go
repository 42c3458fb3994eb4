package inference

// Deterministic hashing for jitter, the prefix cache and the policy's choices
// (package policy draws from the same functions). Draws come from hashes of
// (seed, context), never from a shared random source, so concurrent requests
// cannot disturb each other's results.

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// HashStrings folds seed and parts into one 64-bit FNV-1a hash. Parts are
// separated so ("ab","c") and ("a","bc") differ.
func HashStrings(seed uint64, parts ...string) uint64 {
	h := uint64(fnvOffset)
	for i := 0; i < 8; i++ {
		h ^= (seed >> (8 * i)) & 0xff
		h *= fnvPrime
	}
	for _, p := range parts {
		for i := 0; i < len(p); i++ {
			h ^= uint64(p[i])
			h *= fnvPrime
		}
		h ^= 0xff // separator: not a valid UTF-8 byte, so it cannot collide with text
		h *= fnvPrime
	}
	return Splitmix64(h)
}

// Splitmix64 scrambles x; it turns a hash plus a salt into an independent draw.
func Splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// unitDraw maps a hash and a salt to a float in [0, 1).
func unitDraw(h, salt uint64) float64 {
	return float64(Splitmix64(h^salt)>>11) / (1 << 53)
}

// JitterSeed derives a Job's jitter seed from the request seed and the
// response context (for example the response id or the run, lane and turn), so
// the same seeded rollout gets the same modelled timings.
func JitterSeed(seed int64, context ...string) uint64 {
	return HashStrings(uint64(seed), context...)
}
