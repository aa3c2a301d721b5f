package redisstore

func child() bool { return false }
