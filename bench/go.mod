module miniapp-host/bench

go 1.22
