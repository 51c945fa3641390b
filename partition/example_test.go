package partition_test

import (
	"fmt"
	"time"

	"github.com/tabuladb/tabula/partition"
)

// A partition stress test ("Design a scalable partitioning strategy for Azure Table storage") on a
// simulated clock: one PartitionKey offered 3,000 entities/s for ten seconds against its 2,000/s
// target.
func ExampleTable_Admit() {
	now := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	svc := partition.NewService(&partition.Options{
		Now:    func() time.Time { return now },
		Limits: partition.Limits{Mode: partition.LimitEnforce},
	})
	orders := svc.Table("", "orders")

	admitted, busy := 0, 0
	for range 30000 {
		d := orders.Admit("customer-42", partition.KindInsert, 1)
		if d.Fault == partition.FaultNone {
			admitted++
			orders.RecordWrite("customer-42", 1, 512)
		} else {
			busy++
		}
		now = now.Add(time.Second / 3000)
	}
	fmt.Println("admitted per second:", admitted/10) // 2,000/s plus the initial burst of 2,000
	fmt.Println("refused:", busy)
	fmt.Println("hot key:", svc.Report().Tables[0].HotKeys[0].PartitionKey)
	// Output:
	// admitted per second: 2199
	// refused: 8001
	// hot key: customer-42
}

// Each storage account has its own account target: a burst that exhausts one account's
// bucket, on any of its tables, leaves the other account's untouched.
func ExampleService_Table() {
	now := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	svc := partition.NewService(&partition.Options{
		Now:    func() time.Time { return now },
		Limits: partition.Limits{Mode: partition.LimitEnforce, AccountRate: 100},
	})
	aliceOrders := svc.Table("alice", "orders")
	aliceUsers := svc.Table("alice", "users")
	bobOrders := svc.Table("bob", "orders")

	for i := range 100 { // alice's whole bucket, one second's worth
		aliceOrders.Admit(fmt.Sprint("pk", i), partition.KindInsert, 1)
	}
	fmt.Println("alice/users:", aliceUsers.Admit("pk", partition.KindInsert, 1).Message())
	fmt.Println("bob/orders admitted:", bobOrders.Admit("pk", partition.KindInsert, 1).Fault == partition.FaultNone)
	// Output:
	// alice/users: Operations per second is over the account limit.
	// bob/orders admitted: true
}
