import Foundation
import WorkoutModel

/// One pool length read from a lap event (<doc:SessionAndBuilder#Swimming-recovery-and-multisport-detection>).
public struct PoolLength: Sendable, Hashable {
    public var start: Date
    public var duration: TimeInterval
    public var kind: LengthKind
    public var style: String?
    public var strokes: Int?

    /// SWOLF = length seconds + strokes, for active lengths with a stroke count; nil otherwise
    /// (drills and rests have no SWOLF: absent, never 0).
    public var swolf: Double? {
        guard kind == .active, let strokes else { return nil }
        return duration + Double(strokes)
    }

    /// The length a lap event describes; nil for a lap without `SwimMetadataKey.lengthKind` (a
    /// manual or auto lap) or with metadata that does not describe a length.
    public init?(_ event: WorkoutEvent) {
        guard event.type == .lap, case .string(let raw)? = event.metadata[SwimMetadataKey.lengthKind],
            let kind = LengthKind(rawValue: raw)
        else { return nil }
        self.start = event.start
        self.duration = event.duration
        self.kind = kind
        if case .string(let style)? = event.metadata[SwimMetadataKey.strokeStyle], !style.isEmpty {
            self.style = style
        }
        switch event.metadata[SwimMetadataKey.strokes] {
        case .int(let value)? where value >= 0: strokes = value
        default: strokes = nil
        }
    }

    /// Why a lap event's length metadata is unusable, or nil when it is a valid length (or no length).
    static func problem(with event: WorkoutEvent) -> String? {
        guard event.type == .lap, let kindValue = event.metadata[SwimMetadataKey.lengthKind] else { return nil }
        guard case .string(let raw) = kindValue, LengthKind(rawValue: raw) != nil else {
            return "\(SwimMetadataKey.lengthKind) must be the string active, rest or drill"
        }
        if let strokes = event.metadata[SwimMetadataKey.strokes] {
            guard case .int(let value) = strokes, value >= 0 else {
                return "\(SwimMetadataKey.strokes) must be a whole number >= 0"
            }
        }
        if let style = event.metadata[SwimMetadataKey.strokeStyle] {
            guard case .string = style else { return "\(SwimMetadataKey.strokeStyle) must be a string" }
        }
        return nil
    }
}

/// SWOLF for lengths, swim sets, activities and the workout, derived from the stored lap events.
///
/// A swim set is a run of consecutive non-rest lengths of one stroke style inside one activity; a
/// rest length, a change of style or an activity boundary ends it. Its SWOLF, an activity's and
/// the workout's are the mean SWOLF of their active lengths with a stroke count (drills count as
/// lengths of the set but have no SWOLF). Everything here is a pure function of the events and the
/// activities, so a live snapshot, the finished workout and a journal recovery agree.
enum SwimAnalysis {
    struct Tally: Sendable {
        var count = 0
        var sum = 0.0
        var minimum = Double.infinity
        var maximum = -Double.infinity
        var last = 0.0
        var lastDate: Date?

        mutating func add(_ value: Double, at date: Date) {
            count += 1
            sum += value
            minimum = Swift.min(minimum, value)
            maximum = Swift.max(maximum, value)
            last = value
            lastDate = date
        }

        var mean: Double? { count > 0 ? sum / Double(count) : nil }

        func statistics(start: Date, end: Date, duration: TimeInterval) -> Statistics? {
            guard let mean else { return nil }
            return Statistics(
                quantityType: .swimmingSWOLF, start: start, end: end, minimum: Quantity(minimum, .count),
                maximum: Quantity(maximum, .count), average: Quantity(mean, .count), mostRecent: Quantity(last, .count),
                mostRecentDate: lastDate, duration: duration, sampleCount: count)
        }
    }

    struct Result: Sendable {
        /// The events with SWOLF on active lengths and the derived swim-set segments, sorted by start.
        var events: [WorkoutEvent]
        /// SWOLF tallies per activity index, and for the whole workout.
        var activities: [Int: Tally]
        var workout: Tally
    }

    /// Annotates `events` (sorted by start) and derives swim sets; `activityIndex` maps an instant
    /// to the activity containing it.
    static func analyze(_ events: [WorkoutEvent], activityIndex: (Date) -> Int?) -> Result? {
        guard events.contains(where: { $0.type == .lap && $0.metadata[SwimMetadataKey.lengthKind] != nil }) else {
            return nil
        }
        var output: [WorkoutEvent] = []
        output.reserveCapacity(events.count + 8)
        var result = Result(events: [], activities: [:], workout: Tally())
        var set: (first: Date, end: Date, style: String?, activity: Int?, lengths: Int, tally: Tally)?

        func closeSet() {
            guard let open = set else { return }
            set = nil
            var metadata: Metadata = [
                MetadataKey.segmentKind: .string("swimSet"), SwimMetadataKey.lengths: .int(open.lengths),
                SwimMetadataKey.activeLengths: .int(open.tally.count),
            ]
            if let style = open.style { metadata[SwimMetadataKey.strokeStyle] = .string(style) }
            if let mean = open.tally.mean { metadata[SwimMetadataKey.swolf] = .double(mean) }
            output.append(
                WorkoutEvent(
                    type: .segment, start: open.first, duration: open.end.timeIntervalSince(open.first),
                    metadata: metadata))
        }

        for event in events {
            guard let length = PoolLength(event) else {
                output.append(event)
                continue
            }
            let activity = activityIndex(length.start)
            var annotated = event
            annotated.metadata[SwimMetadataKey.swolf] = nil
            if length.kind == .rest {
                closeSet()
                output.append(annotated)
                continue
            }
            if let open = set, open.style != length.style || open.activity != activity { closeSet() }
            if set == nil {
                set = (length.start, event.end, length.style, activity, 0, Tally())
            }
            set?.lengths += 1
            set?.end = event.end
            if let swolf = length.swolf {
                annotated.metadata[SwimMetadataKey.swolf] = .double(swolf)
                set?.tally.add(swolf, at: event.end)
                result.workout.add(swolf, at: event.end)
                if let activity { result.activities[activity, default: Tally()].add(swolf, at: event.end) }
            }
            output.append(annotated)
        }
        closeSet()
        // Segments are appended when their set closes: put every event back in start order (stable).
        result.events = output.enumerated().sorted { lhs, rhs in
            lhs.element.start == rhs.element.start ? lhs.offset < rhs.offset : lhs.element.start < rhs.element.start
        }.map(\.element)
        return result
    }
}
