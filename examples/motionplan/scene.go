package main

// HideObstacles returns a copy of g with up to n doors closed: doorways
// that g's cheapest start–goal route passes through, spread along it, each
// closed only if the goal stays reachable. A robot that trusts g finds them
// shut with its sensors, and needs a new long-term plan to get round.
func HideObstacles(g *Grid, start, goal Point, n int) *Grid {
	truth := g.Clone()
	route, ok := AStar(g, start, goal)
	if !ok {
		return truth
	}
	// Doorways on the route: free cells between two blocked ones.
	var doors []int
	for i, p := range route {
		if across(g, p) != (Point{}) && (len(doors) == 0 || doors[len(doors)-1] < i-1) {
			doors = append(doors, i)
		}
	}
	for k := 0; k < n && k < len(doors); k++ {
		d := route[doors[(2*k+1)*len(doors)/(2*n)]]
		dir := across(g, d)
		try := truth.Clone()
		// Close the gap along the wall, two cells either way.
		for j := -2; j <= 2; j++ {
			if p := (Point{d.X + j*dir.X, d.Y + j*dir.Y}); try.In(p) && p != start && p != goal {
				try.Set(p, true)
			}
		}
		if _, ok := AStar(try, start, goal); ok {
			truth = try
		}
	}
	return truth
}

// across returns the direction of the wall whose doorway p is in, or the
// zero Point if p is in none: p's neighbours along the way through are free,
// and wall cells lie within two cells on both sides along the wall.
func across(g *Grid, p Point) Point {
	b := func(dx, dy int) bool { return g.Blocked(Point{p.X + dx, p.Y + dy}) }
	switch {
	case !b(-1, 0) && !b(1, 0) && (b(0, -1) || b(0, -2)) && (b(0, 1) || b(0, 2)):
		return Point{0, 1}
	case !b(0, -1) && !b(0, 1) && (b(-1, 0) || b(-2, 0)) && (b(1, 0) || b(2, 0)):
		return Point{1, 0}
	}
	return Point{}
}
