package tabula

// Namespace is a set of tables of its own inside a DB, as each storage account of the
// service has: a table in one namespace is invisible in every other, and two namespaces may
// hold tables of the same name. It is what the REST front end serves each account from.
//
// The DB's own methods (CreateTable, Table, ListTables …) work on the root namespace,
// Namespace(""); a namespace needs no creating, and holds nothing until a table is created
// in it. A Namespace is a cheap handle, safe for concurrent use.
type Namespace struct {
	db   *DB
	name string
}

// Namespace returns the namespace called name; "" is the root namespace, whose tables are the
// ones the DB's own methods see.
func (db *DB) Namespace(name string) *Namespace { return &Namespace{db: db, name: name} }

// Name returns the namespace's name ("" for the root namespace).
func (n *Namespace) Name() string { return n.name }

// Table returns a handle on a table of the namespace without checking that it exists, as
// DB.Table does.
func (n *Namespace) Table(name string) *Table { return &Table{db: n.db, ns: n.name, name: name} }

// serviceTableName is the name a table has in the simulated service (and its heat report):
// "namespace/Table" outside the root namespace.
func serviceTableName(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}
