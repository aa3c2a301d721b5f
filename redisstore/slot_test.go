package redisstore

import "testing"

// TestSlotOf checks slotOf against the slots Redis's CLUSTER KEYSLOT gives
// (the values of the Redis Cluster specification's examples and of a
// real server), and tagOfSlot against slotOf for every slot.
func TestSlotOf(t *testing.T) {
	for _, tc := range []struct {
		key  string
		want int
	}{
		{"123456789", 12739}, // CRC16/XMODEM check value 0x31C3
		{"foo", 12182},
		{"{user1000}.following", 3443},
		{"{user1000}.followers", 3443},
		{"foo{}{bar}", slotOf("foo{}{bar}")},
		{"foo{{bar}}zap", slotOf("{bar")},
		{"portico:fx:{k=a}", slotOf("k=a")},
	} {
		if got := slotOf(tc.key); got != tc.want {
			t.Errorf("slotOf(%q) = %d, want %d", tc.key, got, tc.want)
		}
	}
	if slotOf("foo{}{bar}") != int(crc16("foo{}{bar}"))%slots {
		t.Errorf("an empty tag must hash the whole key")
	}
	for s := range slots {
		if got := slotOf("x{" + tagOfSlot(s) + "}"); got != s {
			t.Fatalf("slot of tag %q = %d, want %d", tagOfSlot(s), got, s)
		}
	}
}
