/// Times inside the engine are seconds since the reference date (Date's own representation), kept
/// as plain Doubles on the hot path.
typealias Seconds = Double

/// A half-open span [start, end) of time.
struct Span: Sendable, Hashable {
    var start: Seconds
    var end: Seconds
    var length: Seconds { end - start }
}

/// The spans when the workout is not active: user pauses and motion pauses, merged.
///
/// Time is inactive while the user is paused or motion is paused. Events must arrive in time
/// order; a pause while paused or a resume while running is redundant and reported as such.
struct InactiveTimeline: Sendable, Hashable {
    private(set) var closed: [Span] = []
    /// Start of the inactive span still going on, if any.
    private(set) var openStart: Seconds?
    private(set) var userPaused = false
    private(set) var motionPaused = false
    /// Time of the last pause-family event applied (ordering check).
    private(set) var lastEventTime: Seconds = -.infinity

    var isEmpty: Bool { closed.isEmpty && openStart == nil }

    /// Applies a pause-family change; returns false when it is redundant (no state change).
    mutating func apply(user: Bool?, motion: Bool?, at time: Seconds) -> Bool {
        let wasInactive = userPaused || motionPaused
        var changed = false
        if let user, user != userPaused {
            userPaused = user
            changed = true
        }
        if let motion, motion != motionPaused {
            motionPaused = motion
            changed = true
        }
        guard changed else { return false }
        lastEventTime = time
        let isInactive = userPaused || motionPaused
        if isInactive, !wasInactive {
            openStart = time
        } else if !isInactive, wasInactive, let start = openStart {
            if time > start { closed.append(Span(start: start, end: time)) }
            openStart = nil
        }
        return true
    }

    /// Whether the instant `t` is inactive; spans are half-open, so a resume instant is active.
    @inline(__always)
    func isInactive(_ t: Seconds) -> Bool {
        if let openStart, t >= openStart { return true }
        if closed.isEmpty { return false }
        var index = firstSpan(endingAfter: t)
        while index < closed.count, closed[index].start <= t {
            if t < closed[index].end { return true }
            index += 1
        }
        return false
    }

    /// Start of the first inactive span beginning after the active instant `t`, if any.
    func nextInactiveStart(after t: Seconds) -> Seconds? {
        var result = openStart.flatMap { $0 > t ? $0 : nil }
        guard !closed.isEmpty else { return result }
        var low = 0
        var high = closed.count
        while low < high {
            let mid = (low + high) / 2
            if closed[mid].start <= t { low = mid + 1 } else { high = mid }
        }
        if low < closed.count, result.map({ closed[low].start < $0 }) ?? true { result = closed[low].start }
        return result
    }

    /// Length of [a, b) that is active.
    @inline(__always)
    func activeLength(_ a: Seconds, _ b: Seconds) -> Seconds {
        guard b > a else { return 0 }
        if isEmpty { return b - a }
        return (b - a) - inactiveOverlap(a, b)
    }

    /// Length of [a, b) that is inactive.
    @inline(__always)
    func inactiveOverlap(_ a: Seconds, _ b: Seconds) -> Seconds {
        guard b > a else { return 0 }
        var total: Seconds = 0
        if let openStart, b > openStart { total += b - Swift.max(a, openStart) }
        if closed.isEmpty { return total }
        var index = firstSpan(endingAfter: a)
        while index < closed.count, closed[index].start < b {
            let span = closed[index]
            total += Swift.min(b, span.end) - Swift.max(a, span.start)
            index += 1
        }
        return total
    }

    /// Index of the first closed span whose end is after `t`.
    private func firstSpan(endingAfter t: Seconds) -> Int {
        if let last = closed.last, last.end <= t { return closed.count }
        var low = 0
        var high = closed.count
        while low < high {
            let mid = (low + high) / 2
            if closed[mid].end <= t { low = mid + 1 } else { high = mid }
        }
        return low
    }
}
