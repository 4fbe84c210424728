package offline

import "math/bits"

// The offline model must give the same bytes for the same inputs on every
// platform and in every process, so it cannot use hash/maphash (randomly
// seeded per process). This is a small, allocation-free streaming hash: eight
// bytes at a time through a multiply–rotate step, finished with the
// splitmix64 finaliser. It only needs to spread inputs well, not resist
// attackers.

const (
	prime1 = 0x9e3779b97f4a7c15
	prime2 = 0xbf58476d1ce4e5b9
	prime3 = 0x94d049bb133111eb
)

// mix64 is the splitmix64 finaliser: a bijection with good avalanche.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= prime2
	x ^= x >> 27
	x *= prime3
	x ^= x >> 31
	return x
}

// hasher accumulates strings and integers into one 64-bit key.
type hasher struct{ h uint64 }

func newHasher(start uint64) hasher { return hasher{h: start ^ prime1} }

func (h *hasher) round(v uint64) {
	h.h = bits.RotateLeft64((h.h^v)*prime1, 31) * prime2
}

// u64 adds an integer.
func (h *hasher) u64(v uint64) { h.round(mix64(v + prime3)) }

// str adds a string; its length is mixed in first so that ("ab","c") and
// ("a","bc") hash differently.
func (h *hasher) str(s string) {
	h.round(uint64(len(s)) ^ prime3)
	for len(s) >= 8 {
		v := uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
			uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
		h.round(v)
		s = s[8:]
	}
	var v uint64
	for i := 0; i < len(s); i++ {
		v |= uint64(s[i]) << (8 * i)
	}
	h.round(v ^ 0xff)
}

func (h *hasher) sum() uint64 { return mix64(h.h) }

// hashStrings is a convenience for small fixed key sets.
func hashStrings(start uint64, ss ...string) uint64 {
	h := newHasher(start)
	for _, s := range ss {
		h.str(s)
	}
	return h.sum()
}

// rng is splitmix64: tiny, fast, and fully determined by its start value.
type rng struct{ s uint64 }

func newRNG(seed uint64) rng { return rng{s: seed} }

func (r *rng) next() uint64 {
	r.s += prime1
	return mix64(r.s)
}

// intn returns a value in [0, n); n must be > 0.
func (r *rng) intn(n int) int { return int(r.next() % uint64(n)) }

// float returns a value in [0, 1).
func (r *rng) float() float64 { return float64(r.next()>>11) / (1 << 53) }

// unit maps a hash to [0, 1).
func unit(h uint64) float64 { return float64(h>>11) / (1 << 53) }
