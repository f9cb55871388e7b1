import Foundation
import WorkoutModel

/// A sample waiting in (or folded from) its stream, with its value in the canonical unit.
struct PendingSample: Sendable, Hashable {
    var start: Seconds
    var end: Seconds
    var value: Double
}

/// One stream: the samples of one quantity type from one source.
///
/// Samples wait in `pending` (sorted by start) until they are older than the reorder window
/// relative to the newest sample of the stream; then they are folded into the accumulators in
/// time order. `last` is the newest folded sample: its value still holds (time-weighted average)
/// until the next sample folds or the hold cap runs out.
struct StreamState: Sendable, Hashable {
    let type: QuantityType
    let source: SourceDevice
    let typeIndex: Int
    let cumulative: Bool
    var pending: [PendingSample] = []
    var head = 0
    var maxStart = -Double.infinity
    var last: PendingSample?
    /// Values of the folded samples that share `last.start` (duplicate detection after folding).
    var valuesAtLast: [Double] = []

    init(type: QuantityType, source: SourceDevice) {
        self.type = type
        self.source = source
        typeIndex = type.index
        cumulative = type.aggregationStyle == .cumulative
    }

    enum Insertion { case inserted, duplicate, tooLate }

    /// Sorts `sample` into the pending buffer; detects exact duplicates and too-late arrivals.
    mutating func insert(_ sample: PendingSample) -> Insertion {
        if let last {
            if sample.start < last.start { return .tooLate }
            if sample.start == last.start, valuesAtLast.contains(sample.value) { return .duplicate }
        }
        if head == pending.count || sample.start >= pending[pending.count - 1].start {
            // In order: the common case. Check the run of equal starts at the tail for duplicates.
            var index = pending.count - 1
            while index >= head, pending[index].start == sample.start {
                if pending[index].value == sample.value { return .duplicate }
                index -= 1
            }
            pending.append(sample)
        } else {
            var low = head
            var high = pending.count
            while low < high {
                let mid = (low + high) / 2
                if pending[mid].start <= sample.start { low = mid + 1 } else { high = mid }
            }
            var index = low - 1
            while index >= head, pending[index].start == sample.start {
                if pending[index].value == sample.value { return .duplicate }
                index -= 1
            }
            pending.insert(sample, at: low)
        }
        if sample.start > maxStart { maxStart = sample.start }
        return .inserted
    }

    /// Drops folded entries from the front of the buffer once they dominate it.
    mutating func compact() {
        if head > 32, head * 2 > pending.count {
            pending.removeFirst(head)
            head = 0
        }
    }
}

/// An activity as the builder keeps it.
struct ActivityRecord: Sendable, Hashable {
    var id: UUID
    var configuration: WorkoutConfiguration
    var start: Seconds
    var end: Seconds?
    var metadata: Metadata
    /// Bit i set: quantity type with index i is collected during this activity.
    var collectMask: UInt64

    var endOrInfinity: Seconds { end ?? .infinity }
}

@inline(__always) func seconds(_ date: Date) -> Seconds { date.timeIntervalSinceReferenceDate }
@inline(__always) func date(_ seconds: Seconds) -> Date { Date(timeIntervalSinceReferenceDate: seconds) }

/// The whole live builder as one value: validation, timeline, streams and statistics
/// (<doc:SessionAndBuilder#What-we-chose-where-HealthKit-is-silent>).
///
/// Being a value makes multi-step operations transactional: callers mutate a copy and keep it
/// only when every step succeeded. The sample path mutates in place and never throws after its
/// first mutation. Every accepted change is appended to `outbox` for the sink.
struct BuilderCore: Sendable {
    static let typeCount = QuantityType.allCases.count

    let configuration: WorkoutConfiguration
    let holdCap: Seconds
    let interpolates: Bool
    let excludesRests: Bool
    let openWaterSWOLF: OpenWaterSWOLF?
    let reorderWindow: Seconds
    let policy: InvalidInputPolicy
    let dataSource: WorkoutDataSource
    let workoutMask: UInt64
    var workoutID: UUID
    /// Position of the seeded id sequence (nil: random ids); a value, so failed calls roll it back.
    var idState: UInt64?

    var state: BuilderState = .notStarted
    var workoutStart: Seconds = 0
    var workoutEnd: Seconds?
    var activities: [ActivityRecord] = []
    /// Accumulators: span 0 is the workout, span k + 1 is activities[k]; `typeCount` per span.
    var accumulators: [Accumulator]
    var inactive = InactiveTimeline()
    var events: [WorkoutEvent] = []
    /// With `BuilderOptions.averagesExcludeRests`: rest lengths of pool swims, in time order. A
    /// reading's hold leaves them out, so a pool swim's averages are over the lengths swum, while
    /// its timer runs on.
    var restSpans: [Span] = []
    var laps: [Span] = []
    var metadata: Metadata = [:]
    var streams: [StreamState] = []
    var streamLookup: [StreamKey: Int] = [:]
    /// Latest end of any folded interval amount: the timeline may not change before it.
    var settledThrough = -Double.infinity
    /// Latest instant of any folded reading: the timeline may not change at or before it.
    var settledInstant = -Double.infinity
    /// Latest end of anything accepted (samples, events, route, activities).
    var latestData = -Double.infinity
    var counters = IngestCounters()
    var routePointCount = 0
    var recordsChanges: Bool
    var outbox: [RecordingChange] = []
    /// The legs of a multisport session in order (`BuilderOptions.plannedLegs(for:)`); a detected plan
    /// (`openPlan`) grows as its legs are found.
    var plan: [WorkoutConfiguration] = []
    /// Whether the plan is found from the sensors (`LegSequence.detected`): it grows with each leg begun.
    var openPlan = false
    /// With automatic transitions: the masks of the planned legs.
    var planMasks: [UInt64] = []
    /// With automatic transitions in a detected plan: what a leg of any sport collects (the next leg's
    /// types are not known before it is found).
    var openLookahead: UInt64 = 0
    /// While a session detects transitions: the next planned leg's mask. The open last activity also
    /// collects those types, so the first seconds of a leg that is detected after the fact (T1, T2)
    /// are kept and attributed to it once its boundary exists. 0 otherwise.
    var lookaheadMask: UInt64 = 0

    struct StreamKey: Hashable, Sendable {
        var type: QuantityType
        var source: SourceDevice
    }

    init(configuration: WorkoutConfiguration, options: BuilderOptions, recordsChanges: Bool) throws(EngineError) {
        try options.validate()
        if let lap = configuration.lapLength {
            guard lap.unit.dimension == .length, lap.value.isFinite, lap.value > 0 else {
                throw .invalidConfiguration("lapLength must be a positive length such as 25 m, got \(lap)")
            }
        }
        self.configuration = configuration
        holdCap = options.holdCap
        interpolates = options.interpolation == .linear
        excludesRests = options.averagesExcludeRests
        openWaterSWOLF = options.openWaterSWOLF
        reorderWindow = options.effectiveReorderWindow(for: configuration)
        plan = options.plannedLegs(for: configuration)
        openPlan = options.legs == .detected
        if options.automaticTransitions.enabled, options.hasPlan(for: configuration) {
            planMasks = plan.map { options.dataSource.mask(for: $0) }
            if openPlan {
                // The next leg of a detected plan may be any sport: the open leg collects them all.
                openLookahead = ([WorkoutActivityType.transition] + LegSequence.sports.sorted { $0.rawValue < $1.rawValue })
                    .reduce(0) { $0 | options.dataSource.mask(for: WorkoutConfiguration(activityType: $1)) }
            }
        }
        policy = options.invalidInput
        dataSource = options.dataSource
        workoutMask = options.dataSource.mask(for: configuration)
        idState = options.identifiers.seed
        // Always draw, so a seeded sequence is in the same place whether or not the id was given.
        let drawn = IdentifierSource.next(&idState)
        workoutID = options.workoutID ?? drawn
        accumulators = Array(repeating: Accumulator(), count: Self.typeCount)
        self.recordsChanges = recordsChanges
    }

    /// Queues an accepted change for the sink. Session state changes are always queued, since
    /// state-change subscribers need them even when there is no sink.
    /// The next workout or activity id.
    mutating func nextID() -> UUID { IdentifierSource.next(&idState) }

    mutating func emit(_ change: RecordingChange) {
        if recordsChanges {
            outbox.append(change)
        } else if case .sessionState = change {
            outbox.append(change)
        }
    }

    mutating func takeOutbox() -> [RecordingChange] {
        defer { outbox.removeAll(keepingCapacity: true) }
        return outbox
    }

    /// Throws what `add(samples:)` would throw before changing anything (state, reject policy).
    func precheck(samples: [QuantitySample]) throws(EngineError) {
        try requireAccepting("add samples")
        if policy == .reject {
            for sample in samples {
                if let error = rejection(for: sample) { throw error }
            }
        }
    }

    /// The earliest instant a pause or boundary may be placed at, from `t` on: at or after every
    /// folded interval, after every folded reading.
    func earliestUnsettled(from t: Seconds) -> Seconds {
        var result = Swift.max(t, settledThrough)
        if result <= settledInstant { result = settledInstant.nextUp }
        return result
    }

    private func requireAccepting(_ operation: String) throws(EngineError) {
        guard state == .collecting || state == .ended else { throw .builderState(operation: operation, state: state) }
    }

    /// A boundary or pause at `time` must not move data already folded into statistics: it must lie
    /// at or after every folded interval's end and strictly after every folded reading's instant.
    private func requireUnsettled(_ operation: String, at time: Seconds) throws(EngineError) {
        if time < settledThrough || time <= settledInstant {
            throw .beforeSettledData(
                operation: operation, date: date(time), settled: date(Swift.max(settledThrough, settledInstant)))
        }
    }

    // MARK: lifecycle

    mutating func beginCollection(at start: Date) throws(EngineError) {
        guard state == .notStarted else { throw .builderState(operation: "begin collection", state: state) }
        guard start.timeIntervalSinceReferenceDate.isFinite else {
            throw .invalidConfiguration("the start date is not a finite date")
        }
        state = .collecting
        workoutStart = seconds(start)
        latestData = workoutStart
        emit(.collectionBegan(start, workoutID: workoutID))
    }

    mutating func endCollection(at end: Date) throws(EngineError) {
        guard state == .collecting else { throw .builderState(operation: "end collection", state: state) }
        let t = seconds(end)
        guard t >= workoutStart else { throw .endBeforeStart(start: date(workoutStart), end: end) }
        guard t >= latestData else { throw .endBeforeRecordedData(end: end, latest: date(latestData)) }
        if let last = activities.indices.last, activities[last].end == nil {
            activities[last].end = t
        }
        workoutEnd = t
        state = .ended
        emit(.collectionEnded(end))
    }

    mutating func finish() throws(EngineError) -> Workout {
        guard state == .ended else { throw .builderState(operation: "finish the workout", state: state) }
        foldAll()
        state = .finished
        let workout = snapshotWorkout(at: workoutEnd ?? workoutStart)
        emit(.finished(workout))
        return workout
    }

    mutating func discard() throws(EngineError) {
        guard state != .finished, state != .discarded else {
            throw .builderState(operation: "discard the workout", state: state)
        }
        state = .discarded
        emit(.discarded)
    }

    // MARK: samples

    /// Index of the stream for (type, source), created on first use.
    @inline(__always)
    private mutating func streamIndex(_ type: QuantityType, _ source: SourceDevice) -> Int {
        // A linear scan beats hashing the source's strings for the handful of streams a workout has.
        if streams.count <= 16 {
            for index in streams.indices where streams[index].type == type && streams[index].source == source {
                return index
            }
        } else if let index = streamLookup[StreamKey(type: type, source: source)] {
            return index
        }
        streams.append(StreamState(type: type, source: source))
        streamLookup[StreamKey(type: type, source: source)] = streams.count - 1
        return streams.count - 1
    }

    private func isInsideWorkout(start: Seconds, end: Seconds) -> Bool {
        start >= workoutStart && end <= (workoutEnd ?? .infinity)
    }

    /// The typed error for the first invalid sample, as the reject policy reports it.
    private func rejection(for sample: QuantitySample) -> EngineError? {
        do {
            _ = try sample.validate()
        } catch {
            return .invalidSample(error)
        }
        if !isInsideWorkout(start: seconds(sample.start), end: seconds(sample.end)) {
            return .sampleOutsideWorkout(
                sample.type, start: sample.start, end: sample.end, workoutStart: date(workoutStart),
                workoutEnd: workoutEnd.map(date))
        }
        return nil
    }

    mutating func add(samples: [QuantitySample]) throws(EngineError) -> IngestReport {
        try requireAccepting("add samples")
        if policy == .reject {
            for sample in samples {
                if let error = rejection(for: sample) { throw error }
            }
        }
        // From here on nothing throws: the batch is applied in place.
        var report = IngestReport()
        var accepted: [QuantitySample] = []
        if recordsChanges { accepted.reserveCapacity(samples.count) }
        let end = workoutEnd ?? .infinity
        for sample in samples {
            let value: Double
            do {
                value = try sample.validate()
            } catch {
                report.dropped[error.reason, default: 0] += 1
                if report.firstProblem == nil { report.firstProblem = error.description }
                continue
            }
            let start = seconds(sample.start)
            let stop = seconds(sample.end)
            guard start >= workoutStart, stop <= end else {
                report.dropped[.outsideWorkout, default: 0] += 1
                continue
            }
            let typeIndex = sample.type.index
            guard collectMask(at: start) & (1 << UInt64(typeIndex)) != 0 else {
                report.dropped[.notCollected, default: 0] += 1
                continue
            }
            let index = streamIndex(sample.type, sample.source)
            switch streams[index].insert(PendingSample(start: start, end: stop, value: value)) {
            case .duplicate:
                report.dropped[.duplicate, default: 0] += 1
                continue
            case .tooLate:
                report.dropped[.tooLate, default: 0] += 1
                continue
            case .inserted:
                break
            }
            report.accepted += 1
            if stop > latestData { latestData = stop }
            if recordsChanges { accepted.append(sample) }
            foldSettled(stream: index)
        }
        counters.accepted += report.accepted
        for (reason, count) in report.dropped { counters.drop(reason, count: count) }
        if !accepted.isEmpty { emit(.samples(accepted)) }
        if !report.dropped.isEmpty { emit(.dropped(report.dropped)) }
        return report
    }

    /// Folds the stream's samples that are older than the reorder window.
    @inline(__always)
    private mutating func foldSettled(stream index: Int) {
        let threshold = streams[index].maxStart - reorderWindow
        while streams[index].head < streams[index].pending.count,
            streams[index].pending[streams[index].head].start < threshold
        {
            let sample = streams[index].pending[streams[index].head]
            streams[index].head += 1
            fold(sample, stream: index)
        }
        streams[index].compact()
    }

    /// Folds every pending sample of every stream (finish, and reads on a copy).
    mutating func foldAll() {
        for index in streams.indices {
            while streams[index].head < streams[index].pending.count {
                let sample = streams[index].pending[streams[index].head]
                streams[index].head += 1
                fold(sample, stream: index)
            }
            streams[index].pending.removeAll()
            streams[index].head = 0
        }
    }

    @inline(__always)
    private mutating func fold(_ sample: PendingSample, stream index: Int) {
        let typeIndex = streams[index].typeIndex
        if streams[index].cumulative, sample.end > sample.start {
            distributeAmount(sample.value, from: sample.start, to: sample.end, typeIndex: typeIndex)
            if sample.end > settledThrough { settledThrough = sample.end }
        } else {
            if streams[index].cumulative {
                distributeAmount(sample.value, from: sample.start, to: sample.end, typeIndex: typeIndex)
            } else {
                if let previous = streams[index].last {
                    hold(
                        previous.value, from: previous.start, until: sample.start, typeIndex: typeIndex,
                        nextValue: sample.value)
                }
                addReading(sample.value, at: sample.start, typeIndex: typeIndex)
            }
            if sample.start > settledInstant { settledInstant = sample.start }
        }
        if let last = streams[index].last, last.start != sample.start {
            streams[index].valuesAtLast.removeAll(keepingCapacity: true)  // no allocation per sample
        }
        streams[index].valuesAtLast.append(sample.value)
        streams[index].last = sample
    }

    // MARK: attribution

    /// The collection mask in force at instant `t`: the activity's, or the workout's between activities.
    @inline(__always)
    private func collectMask(at t: Seconds) -> UInt64 {
        if let index = activityIndex(at: t) {
            if lookaheadMask != 0, index + 1 == activities.count, activities[index].end == nil {
                return activities[index].collectMask | lookaheadMask
            }
            return activities[index].collectMask
        }
        return workoutMask
    }

    /// The activity containing instant `t`: [start, end), or the closing instant of an activity that
    /// no other activity starts at.
    @inline(__always)
    func activityIndex(at t: Seconds) -> Int? {
        guard let index = lastActivity(startingAtOrBefore: t) else { return nil }
        return t <= activities[index].endOrInfinity ? index : nil
    }

    @inline(__always)
    private func lastActivity(startingAtOrBefore t: Seconds) -> Int? {
        guard let last = activities.indices.last else { return nil }
        if activities[last].start <= t { return last }
        var low = 0
        var high = last
        while low < high {
            let mid = (low + high) / 2
            if activities[mid].start <= t { low = mid + 1 } else { high = mid }
        }
        return low == 0 ? nil : low - 1
    }

    /// Active seconds of [a, b).
    @inline(__always)
    private func activeLength(_ a: Seconds, _ b: Seconds) -> Seconds {
        inactive.activeLength(a, b)
    }

    /// Calls `body(span, activeSeconds)` for the workout (span 0) and each activity (span k + 1)
    /// overlapping [a, b), b > a, with the active seconds of the overlap.
    ///
    /// Static so that `body` may mutate the builder's accumulators while the timeline is read.
    @inline(__always)
    private static func forEachOverlap(
        _ a: Seconds, _ b: Seconds, workoutStart: Seconds, workoutEnd: Seconds?, activities: [ActivityRecord],
        inactive: InactiveTimeline, _ body: (Int, Seconds) -> Void
    ) {
        let start = Swift.max(a, workoutStart)
        let end = Swift.min(b, workoutEnd ?? .infinity)
        guard end > start else { return }
        let active = inactive.activeLength(start, end)
        if active > 0 { body(0, active) }
        guard var index = activities.indices.last else { return }
        while index > 0, activities[index].start >= end { index -= 1 }
        while true {
            let activity = activities[index]
            if activity.endOrInfinity <= start { break }
            if activity.start < end {
                let overlap = inactive.activeLength(
                    Swift.max(start, activity.start), Swift.min(end, activity.endOrInfinity))
                if overlap > 0 { body(index + 1, overlap) }
            }
            if index == 0 { break }
            index -= 1
        }
    }

    /// Credits a reading taken at `a` with the time it holds: until `next` (the stream's next
    /// reading), for at most the hold cap, and never across a pause, an activity boundary or the
    /// workout's end, so a value only ever counts in the spans whose min and max it is part of. A
    /// reading taken while paused or outside the workout holds nothing.
    @inline(__always)
    private mutating func hold(
        _ value: Double, from a: Seconds, until next: Seconds, typeIndex: Int, nextValue: Double? = nil
    ) {
        guard a >= workoutStart, a < workoutEnd ?? .infinity, !inactive.isInactive(a) else { return }
        var end = Swift.min(next, a + holdCap)
        if let workoutEnd, workoutEnd < end { end = workoutEnd }
        if let pause = inactive.nextInactiveStart(after: a), pause < end { end = pause }
        let activity = activityIndex(at: a)
        if let activity {
            if let activityEnd = activities[activity].end, activityEnd < end { end = activityEnd }
        } else if let next = nextActivityStart(after: a), next < end {
            end = next
        }
        guard end > a else { return }
        var held = value
        if interpolates, let nextValue, next > a, next - a <= holdCap {
            // The mean of the straight line from `value` at `a` towards `nextValue` at `next`, over [a, end].
            held = value + (nextValue - value) * (end - a) / (next - a) / 2
        }
        var seconds = end - a
        if !restSpans.isEmpty { seconds -= restOverlap(a, end) }
        guard seconds > 0 else { return }
        accumulators[typeIndex].addHold(held, seconds: seconds)
        if let activity {
            accumulators[(activity + 1) * Self.typeCount + typeIndex].addHold(held, seconds: seconds)
        }
    }

    /// Seconds of rest lengths inside [a, b] (rests do not overlap: they are laps).
    private func restOverlap(_ a: Seconds, _ b: Seconds) -> Seconds {
        var total = 0.0
        var index = restSpans.count - 1
        while index >= 0 {
            let span = restSpans[index]
            if span.end <= a { break }
            let overlap = Swift.min(span.end, b) - Swift.max(span.start, a)
            if overlap > 0 { total += overlap }
            index -= 1
        }
        return total
    }

    /// Start of the first activity starting after `t`.
    @inline(__always)
    private func nextActivityStart(after t: Seconds) -> Seconds? {
        let index = (lastActivity(startingAtOrBefore: t) ?? -1) + 1
        return index < activities.count ? activities[index].start : nil
    }

    @inline(__always)
    private mutating func distributeAmount(_ amount: Double, from a: Seconds, to b: Seconds, typeIndex: Int) {
        if b > a {
            let total = b - a
            // The activity the amount started in took it; another activity it straddles into gets
            // its share only if it collects the type (a leg does not count what it does not collect).
            let home = activityIndex(at: a)
            let bit = UInt64(1) << UInt64(typeIndex)
            Self.forEachOverlap(
                a, b, workoutStart: workoutStart, workoutEnd: workoutEnd, activities: activities, inactive: inactive
            ) { span, active in
                if span > 0, span - 1 != home, activities[span - 1].collectMask & bit == 0 { return }
                accumulators[span * Self.typeCount + typeIndex].addAmount(amount * active / total, at: a)
            }
            return
        }
        guard a >= workoutStart, a <= workoutEnd ?? .infinity, !inactive.isInactive(a) else { return }
        accumulators[typeIndex].addAmount(amount, at: a)
        if let index = activityIndex(at: a) {
            accumulators[(index + 1) * Self.typeCount + typeIndex].addAmount(amount, at: a)
        }
    }

    @inline(__always)
    private mutating func addReading(_ value: Double, at t: Seconds, typeIndex: Int) {
        guard t >= workoutStart, t <= workoutEnd ?? .infinity, !inactive.isInactive(t) else { return }
        accumulators[typeIndex].addReading(value, at: t)
        if let index = activityIndex(at: t) {
            accumulators[(index + 1) * Self.typeCount + typeIndex].addReading(value, at: t)
        }
    }

    // MARK: events, route, metadata

    mutating func add(events newEvents: [WorkoutEvent]) throws(EngineError) {
        try requireAccepting("add events")
        let end = workoutEnd ?? .infinity
        var redundant = 0
        for event in newEvents {
            if let key = firstNonFiniteKey(event.metadata) { throw .invalidMetadata(key: key) }
            if let problem = PoolLength.problem(with: event) { throw .invalidLength(start: event.start, problem: problem) }
            let start = seconds(event.start)
            guard event.duration.isFinite, event.duration >= 0, event.type.hasDuration || event.duration == 0 else {
                throw .invalidEventDuration(event.type, duration: event.duration)
            }
            let stop = start + event.duration
            guard start.isFinite, start >= workoutStart, stop <= end else {
                throw .eventOutsideWorkout(event.type, start: event.start, end: event.end)
            }
            switch event.type {
            case .lap:
                try insertLap(Span(start: start, end: stop))
                if excludesRests, stop > start, PoolLength(event)?.kind == .rest {
                    let span = Span(start: start, end: stop)
                    if let last = restSpans.last, last.start > start {
                        let index = restSpans.firstIndex { $0.start > start } ?? restSpans.count
                        restSpans.insert(span, at: index)
                    } else {
                        restSpans.append(span)
                    }
                }
            case .pause, .resume, .motionPaused, .motionResumed:
                guard start >= inactive.lastEventTime else {
                    throw .pauseEventOutOfOrder(event.type, date: event.start, previous: date(inactive.lastEventTime))
                }
                try requireUnsettled("\(event.type.rawValue)", at: start)
                let applied: Bool =
                    switch event.type {
                    case .pause: inactive.apply(user: true, motion: nil, at: start)
                    case .resume: inactive.apply(user: false, motion: nil, at: start)
                    case .motionPaused: inactive.apply(user: nil, motion: true, at: start)
                    default: inactive.apply(user: nil, motion: false, at: start)
                    }
                if !applied {
                    redundant += 1
                    continue
                }
            case .marker, .segment, .pauseOrResumeRequest:
                break
            }
            events.append(event)
            if stop > latestData { latestData = stop }
        }
        if redundant > 0 { counters.drop(.redundantPauseOrResume, count: redundant) }
        let stored = newEvents.count - redundant
        if stored > 0 {
            // Re-emit exactly what was stored, so a replay of the changes stores the same events.
            emit(.events(Array(events.suffix(stored))))
        }
        if redundant > 0 { emit(.dropped([.redundantPauseOrResume: redundant])) }
    }

    private mutating func insertLap(_ lap: Span) throws(EngineError) {
        var low = 0
        var high = laps.count
        while low < high {
            let mid = (low + high) / 2
            if laps[mid].start <= lap.start { low = mid + 1 } else { high = mid }
        }
        // Laps that touch may disagree by rounding (an end computed as start + duration): overlaps
        // under a millisecond are not overlaps.
        let tolerance = 0.001
        if low > 0, laps[low - 1].end > lap.start + tolerance || laps[low - 1].start == lap.start {
            throw .overlappingLap(start: date(lap.start), end: date(lap.end))
        }
        if low < laps.count, laps[low].start < lap.end - tolerance {
            throw .overlappingLap(start: date(lap.start), end: date(lap.end))
        }
        laps.insert(lap, at: low)
    }

    mutating func add(route points: [RoutePoint]) throws(EngineError) -> IngestReport {
        try requireAccepting("add route points")
        let end = workoutEnd ?? .infinity
        if policy == .reject {
            for point in points {
                guard point.isValid else { throw .invalidRoutePoint(date: point.date) }
                let t = seconds(point.date)
                guard t >= workoutStart, t <= end else { throw .routePointOutsideWorkout(date: point.date) }
            }
        }
        var report = IngestReport()
        var accepted: [RoutePoint] = []
        for point in points {
            guard point.isValid else {
                report.dropped[.badLocation, default: 0] += 1
                continue
            }
            let t = seconds(point.date)
            guard t >= workoutStart, t <= end else {
                report.dropped[.outsideWorkout, default: 0] += 1
                continue
            }
            report.accepted += 1
            if t > latestData { latestData = t }
            accepted.append(point)
        }
        routePointCount += report.accepted
        for (reason, count) in report.dropped { counters.drop(reason, count: count) }
        if !accepted.isEmpty { emit(.route(accepted)) }
        if !report.dropped.isEmpty { emit(.dropped(report.dropped)) }
        return report
    }

    mutating func add(metadata newMetadata: Metadata) throws(EngineError) {
        try requireAccepting("add metadata")
        if let key = firstNonFiniteKey(newMetadata) { throw .invalidMetadata(key: key) }
        metadata.merge(newMetadata) { _, new in new }
        emit(.metadata(newMetadata))
    }

    // MARK: activities

    mutating func addActivity(
        id: UUID, configuration activityConfiguration: WorkoutConfiguration, start startDate: Date, end endDate: Date?,
        metadata activityMetadata: Metadata
    ) throws(EngineError) -> WorkoutActivity {
        try requireAccepting("add an activity")
        if let key = firstNonFiniteKey(activityMetadata) { throw .invalidMetadata(key: key) }
        if let lap = activityConfiguration.lapLength {
            guard lap.unit.dimension == .length, lap.value.isFinite, lap.value > 0 else {
                throw .invalidConfiguration("lapLength must be a positive length such as 25 m, got \(lap)")
            }
        }
        let start = seconds(startDate)
        let end = endDate.map(seconds)
        if let end, end < start { throw .activityEndBeforeStart(start: startDate, end: date(end)) }
        if state == .ended, end == nil {
            throw .builderState(operation: "add an open activity", state: state)
        }
        guard start.isFinite, start >= workoutStart, (end ?? start) <= (workoutEnd ?? .infinity) else {
            throw .activityOutsideWorkout(start: startDate, end: endDate)
        }
        var index = activities.count
        while index > 0, activities[index - 1].start > start { index -= 1 }
        if index > 0 {
            let previous = activities[index - 1]
            guard let previousEnd = previous.end else { throw .activityStillOpen(start: date(previous.start)) }
            if previousEnd > start || previous.start == start {
                throw .activityOverlap(
                    start: startDate, end: endDate, existingStart: date(previous.start), existingEnd: date(previousEnd))
            }
        }
        if index < activities.count {
            let next = activities[index]
            if end == nil || end.map({ $0 > next.start }) == true {
                throw .activityOverlap(
                    start: startDate, end: endDate, existingStart: date(next.start), existingEnd: next.end.map(date))
            }
        }
        try requireUnsettled("begin an activity", at: start)
        let record = ActivityRecord(
            id: id, configuration: activityConfiguration, start: start, end: end, metadata: activityMetadata,
            collectMask: dataSource.mask(for: activityConfiguration))
        activities.insert(record, at: index)
        accumulators.insert(
            contentsOf: repeatElement(Accumulator(), count: Self.typeCount), at: (index + 1) * Self.typeCount)
        if let end, end > latestData { latestData = end } else if start > latestData { latestData = start }
        let activity = WorkoutActivity(
            id: id, configuration: activityConfiguration, start: startDate, end: endDate, metadata: activityMetadata)
        emit(.activityBegan(activity))
        return activity
    }

    mutating func updateActivity(id: UUID, end endDate: Date?, metadata newMetadata: Metadata) throws(EngineError) {
        try requireAccepting("update an activity")
        if let key = firstNonFiniteKey(newMetadata) { throw .invalidMetadata(key: key) }
        guard let index = activities.firstIndex(where: { $0.id == id }) else { throw .activityNotFound(id) }
        if let endDate {
            let end = seconds(endDate)
            let activity = activities[index]
            guard end >= activity.start else {
                throw .activityEndBeforeStart(start: date(activity.start), end: endDate)
            }
            if index + 1 < activities.count, end > activities[index + 1].start {
                let next = activities[index + 1]
                throw .activityOverlap(
                    start: date(activity.start), end: endDate, existingStart: date(next.start),
                    existingEnd: next.end.map(date))
            }
            guard end <= workoutEnd ?? .infinity else {
                throw .activityOutsideWorkout(start: date(activity.start), end: endDate)
            }
            if activity.end != end {
                try requireUnsettled("move an activity's end", at: Swift.min(end, activity.end ?? .infinity))
                activities[index].end = end
                if end > latestData { latestData = end }
            }
        }
        activities[index].metadata.merge(newMetadata) { _, new in new }
        emit(.activityUpdated(id: id, end: endDate, metadata: newMetadata))
    }

    /// The last activity if it is still open.
    var currentActivityIndex: Int? {
        guard let last = activities.indices.last, activities[last].end == nil else { return nil }
        return last
    }

    // MARK: reading

    /// The instant statistics are read up to: the workout's end once ended, else `now`.
    func readEnd(now: Seconds) -> Seconds {
        if let workoutEnd { return workoutEnd }
        return Swift.max(workoutStart, now)
    }

    func elapsed(now: Seconds) -> Seconds {
        guard state != .notStarted else { return 0 }
        return readEnd(now: now) - workoutStart
    }

    func activeDuration(now: Seconds) -> Seconds {
        guard state != .notStarted else { return 0 }
        return activeLength(workoutStart, readEnd(now: now))
    }

    /// A copy with every pending sample folded and every open hold closed at `end`: what the
    /// statistics are at that instant. The original is untouched.
    func settledCopy(readEnd end: Seconds) -> BuilderCore {
        var copy = self
        copy.recordsChanges = false
        copy.foldAll()
        for index in copy.streams.indices where !copy.streams[index].cumulative {
            guard let last = copy.streams[index].last else { continue }
            copy.hold(last.value, from: last.start, until: end, typeIndex: copy.streams[index].typeIndex)
        }
        return copy
    }

    func statistics(span: Int, start: Seconds, end: Seconds) -> [QuantityType: Statistics] {
        let duration = activeLength(start, end)
        var result: [QuantityType: Statistics] = [:]
        for type in QuantityType.allCases {
            if let statistics = accumulators[span * Self.typeCount + type.index].statistics(
                type: type, start: start, end: end, duration: duration)
            {
                result[type] = statistics
            }
        }
        return result
    }

    /// The SWOLF statistic of an open-water swim span (`openWaterSWOLF`); nil for anything else or
    /// without a convention.
    func openWaterStatistics(
        _ configuration: WorkoutConfiguration, _ statistics: [QuantityType: Statistics], start: Date, end: Date,
        duration: TimeInterval
    ) -> Statistics? {
        guard let openWaterSWOLF, configuration.activityType == .swimming,
            configuration.swimmingLocationType == .openWater,
            let strokes = statistics[.swimmingStrokeCount]?.sum?.doubleValue(for: .count),
            let meters = statistics[.distanceSwimming]?.sum?.doubleValue(for: .meter),
            let value = openWaterSWOLF.value(seconds: duration, strokes: strokes, meters: meters)
        else { return nil }
        let quantity = Quantity(value, .count)
        return Statistics(
            quantityType: .swimmingSWOLF, start: start, end: end, minimum: quantity, maximum: quantity,
            average: quantity, mostRecent: quantity, mostRecentDate: end, duration: duration, sampleCount: 1)
    }

    /// Activities with statistics as of `end`; `settled` must come from `settledCopy`.
    func activitySnapshots(readEnd end: Seconds) -> [WorkoutActivity] {
        activities.enumerated().map { offset, record in
            let stop = Swift.min(record.end ?? end, end)
            return WorkoutActivity(
                id: record.id, configuration: record.configuration, start: date(record.start),
                end: record.end.map(date),
                metadata: record.metadata, duration: activeLength(record.start, Swift.max(record.start, stop)),
                statistics: statistics(span: offset + 1, start: record.start, end: Swift.max(record.start, stop)))
        }
    }

    /// The workout as of `now` (its end once ended).
    func snapshotWorkout(at now: Seconds) -> Workout {
        let end = readEnd(now: now)
        let settled = settledCopy(readEnd: end)
        var sortedEvents = events.enumerated().sorted { lhs, rhs in
            lhs.element.start == rhs.element.start ? lhs.offset < rhs.offset : lhs.element.start < rhs.element.start
        }.map(\.element)
        var activities = settled.activitySnapshots(readEnd: end)
        var statistics = settled.statistics(span: 0, start: workoutStart, end: end)
        // SWOLF is derived from the pool lengths, never accumulated from samples.
        statistics[.swimmingSWOLF] = nil
        for index in activities.indices { activities[index].statistics[.swimmingSWOLF] = nil }
        if let swim = SwimAnalysis.analyze(sortedEvents, activityIndex: { activityIndex(at: seconds($0)) }) {
            sortedEvents = swim.events
            statistics[.swimmingSWOLF] = swim.workout.statistics(
                start: date(workoutStart), end: date(end), duration: activeLength(workoutStart, end))
            for (index, tally) in swim.activities where index < activities.count {
                let activity = activities[index]
                activities[index].statistics[.swimmingSWOLF] = tally.statistics(
                    start: activity.start, end: activity.end ?? date(end), duration: activity.duration)
            }
        }
        // Open water has no lengths: SWOLF from the swim's timer time, strokes and distance.
        for index in activities.indices {
            let activity = activities[index]
            if let swolf = openWaterStatistics(
                activity.configuration, activity.statistics, start: activity.start, end: activity.end ?? date(end),
                duration: activity.duration)
            {
                activities[index].statistics[.swimmingSWOLF] = swolf
            }
        }
        if let swolf = openWaterStatistics(
            configuration, statistics, start: date(workoutStart), end: date(end),
            duration: activeLength(workoutStart, end))
        {
            statistics[.swimmingSWOLF] = swolf
        }
        return Workout(
            id: workoutID, configuration: configuration, start: date(workoutStart), end: date(end),
            duration: activeLength(workoutStart, end), activities: activities,
            events: sortedEvents, metadata: metadata, statistics: statistics, counters: counters)
    }
}
