module github.com/lockplugin/lockplugin/lease/sqlstore/pgnotify

go 1.22.0

require (
	github.com/jackc/pgx/v5 v5.6.0
	github.com/lockplugin/lockplugin v0.0.0
)

require (
	github.com/gofrs/flock v0.12.1 // indirect
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20221227161230-091c0ba34f0a // indirect
	github.com/jackc/puddle/v2 v2.2.1 // indirect
	github.com/jinzhu/inflection v1.0.0 // indirect
	github.com/jinzhu/now v1.1.5 // indirect
	golang.org/x/crypto v0.17.0 // indirect
	golang.org/x/sync v0.9.0 // indirect
	golang.org/x/sys v0.22.0 // indirect
	golang.org/x/text v0.20.0 // indirect
	gorm.io/gorm v1.31.2 // indirect
)

replace github.com/lockplugin/lockplugin => ../../../
