package redisstore

import (
	"strconv"
	"strings"
	"sync"
)

// slots is the number of hash slots of a Redis Cluster.
const slots = 16384

// slotOf returns the Redis Cluster hash slot of key: CRC16 (XMODEM) of its
// hash tag (the text between the first '{' and the first '}' after it,
// when not empty) or else of the whole key, modulo 16384.
func slotOf(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	return int(crc16(key)) % slots
}

// crc16 is CRC-16/XMODEM (polynomial 0x1021, initial value 0), the
// checksum Redis Cluster hashes keys with.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// slotTags holds, for each slot, the least n such that the hash tag
// "e"+n hashes to it; built once, on first use (about 170,000 checksums
// of a few bytes).
var slotTags = sync.OnceValue(func() *[slots]uint32 {
	var t [slots]uint32
	var found [slots]bool
	left := slots
	for n := uint32(0); left > 0; n++ {
		s := slotOf("e" + strconv.FormatUint(uint64(n), 10))
		if !found[s] {
			found[s], t[s] = true, n
			left--
		}
	}
	return &t
})

// tagOfSlot returns a hash tag whose keys hash to slot.
func tagOfSlot(slot int) string {
	return "e" + strconv.FormatUint(uint64(slotTags()[slot]), 10)
}
