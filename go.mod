module github.com/lockplugin/lockplugin

go 1.22.0

require (
	github.com/gofrs/flock v0.12.1
	gorm.io/gorm v1.31.2
)

require (
	github.com/jinzhu/inflection v1.0.0 // indirect
	github.com/jinzhu/now v1.1.5 // indirect
	golang.org/x/sys v0.22.0 // indirect
	golang.org/x/text v0.20.0 // indirect
)
