import Foundation

/// The nodes in topological order, or the cycle that prevents one.
extension GraphPlanner {
    // MARK: Order

    /// Kahn's algorithm, stable (declaration order among equals); on a cycle, one cycle's nodes in order.
    func topologicalOrder(count: Int, edges: [PlannedEdge]) -> Result<[Int], CycleError> {
        var indegree = [Int](repeating: 0, count: count)
        var next = [[Int]](repeating: [], count: count)
        for e in edges where !next[e.fromNode].contains(e.toNode) {
            next[e.fromNode].append(e.toNode)
            indegree[e.toNode] += 1
        }
        var ready = (0..<count).filter { indegree[$0] == 0 }
        var order: [Int] = []
        while !ready.isEmpty {
            let n = ready.removeFirst()
            order.append(n)
            for m in next[n] {
                indegree[m] -= 1
                if indegree[m] == 0 {
                    ready.append(m)
                    ready.sort()
                }
            }
        }
        if order.count == count { return .success(order) }
        // Every node left over has a left-over predecessor (that is why it was never ready): walking
        // backwards through them must repeat a node, and the repeat closes a cycle.
        var previous = [[Int]](repeating: [], count: count)
        for e in edges { previous[e.toNode].append(e.fromNode) }
        var path: [Int] = []
        var node = (0..<count).first { indegree[$0] > 0 }!
        while !path.contains(node) {
            path.append(node)
            node = previous[node].first { indegree[$0] > 0 }!
        }
        // Forward order, starting from the node declared first.
        let cycle = Array(path[path.firstIndex(of: node)!...].reversed())
        let first = cycle.firstIndex(of: cycle.min()!)!
        return .failure(CycleError(nodes: Array(cycle[first...] + cycle[..<first])))
    }

    struct CycleError: Error { var nodes: [Int] }
}
