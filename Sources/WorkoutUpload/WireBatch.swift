import Foundation
import WorkoutEngine
import WorkoutModel

/// How a live session is set up on the server (`PUT /v1/sessions/{id}`, docs/openapi.yaml): documented fields only.
public struct SessionSetup: Sendable, Codable, Hashable {
    public var activityType: String
    public var locationType: String?
    public var swimmingLocationType: String?
    public var lapLengthMeters: Double?

    /// The setup of a session recording `configuration`.
    public init(_ configuration: WorkoutConfiguration) {
        activityType = configuration.activityType.rawValue
        locationType = configuration.locationType.rawValue
        swimmingLocationType = configuration.swimmingLocationType.rawValue
        lapLengthMeters = configuration.lapLength.flatMap { $0.doubleValue(for: .meter) }
    }
}

/// One item of a batch as the server reads it (`Batch.items` in docs/openapi.yaml).
struct WireItem: Sendable, Codable, Hashable {
    var kind: String
    var at: WireDate?
    var samples: [WireSample]?
    var events: [WireEvent]?
    var activityType: String?
}

struct WireSample: Sendable, Codable, Hashable {
    var type: String
    var value: Double
    var unit: String
    var start: WireDate
    var end: WireDate?
    var source: WireSource

    init(_ sample: QuantitySample) {
        type = sample.type.rawValue
        value = sample.quantity.value
        unit = sample.quantity.unit.symbol
        start = WireDate(sample.start)
        end = sample.end == sample.start ? nil : WireDate(sample.end)
        source = WireSource(
            name: sample.source.name, manufacturer: sample.source.manufacturer, model: sample.source.model,
            identifier: sample.source.identifier)
    }
}

struct WireSource: Sendable, Codable, Hashable {
    var name: String
    var manufacturer: String?
    var model: String?
    var identifier: String?
}

struct WireEvent: Sendable, Codable, Hashable {
    var type: String
    var start: WireDate
    var duration: Double?
}

/// A date as the server reads it: ISO 8601 with milliseconds (the wire's resolution).
struct WireDate: Sendable, Codable, Hashable {
    var text: String

    init(_ date: Date) {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        text = formatter.string(from: date)
    }

    init(from decoder: any Decoder) throws {
        text = try decoder.singleValueContainer().decode(String.self)
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(text)
    }
}

/// A numbered batch: its items never change once it was sent (a resend must be the same batch).
struct WireBatch: Sendable, Codable, Hashable {
    var seq: Int
    var items: [WireItem]
    /// Not sent: how many samples the items hold (batches are cut at a size).
    var sampleCount: Int
    /// Not sent: whether a request with this batch left (then it may be committed and is never extended).
    var attempted: Bool

    /// The request body: only the documented fields.
    func body() throws -> Data {
        struct Body: Encodable {
            var seq: Int
            var items: [WireItem]
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return try encoder.encode(Body(seq: seq, items: items))
    }
}

/// Turns a recording's committed changes into batch items, in order.
///
/// The server runs its own session: a session call there adds what it adds locally (the pause and resume
/// events of `pause` and `resume`, the first leg of a planned multisport at `start`, the end of the previous
/// leg at a leg change), so those derived changes are not sent again. Route points and metadata have no place
/// in the live wire format: they stay local and are counted.
struct BatchTranslator: Sendable {
    let plannedLegs: [WorkoutActivityType]
    private var startDate: Date?
    private var activities = 0
    private var legIndex: Int?
    /// The pause or resume event the previous session call makes the server add by itself.
    private var derivedEvent: WorkoutEventType?
    /// An activity's end, sent as `endActivity` unless a leg beginning at that instant follows.
    private var pendingEnd: Date?
    private(set) var routePointsNotSent = 0

    init(plannedLegs: [WorkoutActivityType]) {
        self.plannedLegs = plannedLegs
    }

    mutating func items(for changes: [RecordingChange]) -> [WireItem] {
        var items: [WireItem] = []
        for change in changes {
            // An activity's end waits for the next change that matters: a leg beginning at that instant makes
            // it a leg change (the server ends the leg itself), anything else an `endActivity`.
            let keepsPendingEnd: Bool
            switch change {
            case .activityBegan, .dropped, .metadata: keepsPendingEnd = true
            default: keepsPendingEnd = false
            }
            if !keepsPendingEnd, let end = pendingEnd {
                items.append(WireItem(kind: "endActivity", at: WireDate(end)))
                pendingEnd = nil
            }
            switch change {
            case .sessionState(let state):
                derivedEvent = nil
                switch state.to {
                case .running where state.from == .paused:
                    items.append(WireItem(kind: "resume", at: WireDate(state.date)))
                    derivedEvent = .resume
                case .running:
                    startDate = state.date
                    items.append(WireItem(kind: "start", at: WireDate(state.date)))
                    if !plannedLegs.isEmpty { legIndex = 0 }
                case .paused:
                    items.append(WireItem(kind: "pause", at: WireDate(state.date)))
                    derivedEvent = .pause
                case .stopped: items.append(WireItem(kind: "stop", at: WireDate(state.date)))
                case .ended: items.append(WireItem(kind: "end", at: WireDate(state.date)))
                case .notStarted, .prepared: break
                }
            case .samples(let samples):
                if !samples.isEmpty { items.append(WireItem(kind: "samples", samples: samples.map(WireSample.init))) }
            case .events(var events):
                if let derived = derivedEvent, let index = events.firstIndex(where: { $0.type == derived }) {
                    events.remove(at: index)
                    derivedEvent = nil
                }
                if !events.isEmpty {
                    items.append(
                        WireItem(
                            kind: "events",
                            events: events.map {
                                WireEvent(
                                    type: $0.type.rawValue, start: WireDate($0.start),
                                    duration: $0.duration == 0 ? nil : $0.duration)
                            }))
                }
            case .activityBegan(let activity):
                let boundary = pendingEnd
                pendingEnd = nil
                defer { activities += 1 }
                // The plan's first leg: the server's `start` begins it.
                if activities == 0, !plannedLegs.isEmpty, activity.start == startDate { continue }
                if let boundary, boundary != activity.start {
                    items.append(WireItem(kind: "endActivity", at: WireDate(boundary)))
                }
                let next = (legIndex ?? -1) + 1
                if next < plannedLegs.count, plannedLegs[next] == activity.configuration.activityType {
                    legIndex = next
                    items.append(WireItem(kind: "nextLeg", at: WireDate(activity.start)))
                } else {
                    items.append(
                        WireItem(
                            kind: "leg", at: WireDate(activity.start),
                            activityType: activity.configuration.activityType.rawValue))
                }
            case .activityUpdated(_, let end, _):
                if let end { pendingEnd = end }
            case .route(let points):
                routePointsNotSent += points.count
            case .collectionBegan, .collectionEnded, .metadata, .dropped, .finished, .discarded:
                break
            }
        }
        return items
    }
}
