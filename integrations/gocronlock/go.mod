module github.com/lockplugin/lockplugin/integrations/gocronlock

go 1.22.0

require (
	github.com/go-co-op/gocron/v2 v2.21.2
	github.com/lockplugin/lockplugin v0.0.0
)

require (
	github.com/gofrs/flock v0.12.1 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/jonboulle/clockwork v0.5.0 // indirect
	github.com/robfig/cron/v3 v3.0.1 // indirect
	golang.org/x/sys v0.22.0 // indirect
)

replace github.com/lockplugin/lockplugin => ../../
