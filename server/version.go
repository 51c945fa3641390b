package server

import "github.com/tabuladb/tabula"

// secondarySuffix turns an account name into its secondary endpoint's, as read-access
// geo-redundant storage names it (myaccount-secondary.table.core.windows.net; path-style,
// /myaccount-secondary/).
const secondarySuffix = "-secondary"

// DefaultVersion is the x-ms-version a response carries when the request named none: the
// version whose behaviour Tabula reproduces.
const DefaultVersion = "2019-02-02"

// knownVersions are the x-ms-version values the service accepts: every version the
// "Versioning for the Azure Storage services" and "Previous Azure Storage service versions"
// pages list, from 2009-04-14 to 2025-11-05. The Table service's behaviour has not changed
// with them since 2019-02-02 (JSON only), so each is served the same way.
var knownVersions = map[string]bool{
	"2009-04-14": true, "2009-07-17": true, "2009-09-19": true, "2011-08-18": true, "2012-02-12": true, "2013-08-15": true,
	"2014-02-14": true, "2015-02-21": true, "2015-04-05": true, "2015-07-08": true,
	"2015-12-11": true, "2016-05-31": true, "2017-04-17": true, "2017-07-29": true,
	"2017-11-09": true, "2018-03-28": true, "2018-11-09": true, "2019-02-02": true,
	"2019-07-07": true, "2019-10-10": true, "2019-12-12": true, "2020-02-10": true,
	"2020-04-08": true, "2020-06-12": true, "2020-08-04": true, "2020-10-02": true,
	"2020-12-06": true, "2021-02-12": true, "2021-04-10": true, "2021-06-08": true,
	"2021-08-06": true, "2021-10-04": true, "2021-12-02": true, "2022-11-02": true,
	"2023-01-03": true, "2023-08-03": true, "2023-11-03": true,
	"2024-02-04": true, "2024-05-04": true, "2024-08-04": true, "2024-11-04": true,
	"2025-01-05": true, "2025-05-05": true, "2025-07-05": true, "2025-11-05": true,
}

// checkVersion refuses an x-ms-version the service does not know, with its 400
// InvalidHeaderValue. A request without the header is served at DefaultVersion.
func checkVersion(v string) *tabula.Error {
	if v == "" || knownVersions[v] {
		return nil
	}
	return withDetail(errInvalidHeaderValue, "x-ms-version "+v+" is not a version of the service")
}
