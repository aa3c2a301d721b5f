package trace

import "testing"

func TestNewRefusesServerPort(t *testing.T) {
	for _, tt := range []struct {
		port int
		want string
	}{
		{-1, "trace: Config.ServerPort -1 is outside [0, 65535]"},
		{65536, "trace: Config.ServerPort 65536 is outside [0, 65535]"},
	} {
		if tr, err := New(Config{ServerAddress: "api.openai.com", ServerPort: tt.port}); tr != nil || err == nil || err.Error() != tt.want {
			t.Errorf("New(ServerPort %d) = %v, %v; want nil, %q", tt.port, tr, err, tt.want)
		}
	}
	for _, port := range []int{0, 443, 65535} {
		if _, err := New(Config{ServerAddress: "api.openai.com", ServerPort: port}); err != nil {
			t.Errorf("New(ServerPort %d) = %v, want nil", port, err)
		}
	}
}
