import Foundation
import WorkoutEngine
import WorkoutModel
import WorkoutStore

/// JSON on the wire: ISO 8601 dates (fractional seconds optional on input, milliseconds on output).
enum Wire {
    static func decoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            let text = try container.decode(String.self)
            guard let date = parseDate(text) else {
                throw DecodingError.dataCorruptedError(
                    in: container, debugDescription: "'\(text.prefix(64))' is not \(FastISODate.expectedForm)")
            }
            return date
        }
        return decoder
    }

    static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(formatDate(date))
        }
        encoder.nonConformingFloatEncodingStrategy = .convertToString(
            positiveInfinity: "Infinity", negativeInfinity: "-Infinity", nan: "NaN")
        return encoder
    }

    /// A date of the wire, by `FastISODate` only: never a Foundation formatter on client text (ICU crashed the
    /// process on a fraction of 35 digits; a new formatter for each date also cost a third of a loaded server's time).
    static func parseDate(_ text: String) -> Date? { FastISODate.parse(text) }

    /// Foundation's formatters on `text`: the reference `FastISODate` is tested against (tests only; never on
    /// a request's text).
    static func formatterDate(_ text: String) -> Date? {
        let fractional = ISO8601DateFormatter()
        fractional.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = fractional.date(from: text) { return date }
        let plain = ISO8601DateFormatter()
        plain.formatOptions = [.withInternetDateTime]
        return plain.date(from: text)
    }

    static func formatDate(_ date: Date) -> String {
        FastISODate.format(date) ?? formatterText(date)
    }

    /// `formatDate` through Foundation's formatter only (the reference `FastISODate.format` is tested against).
    static func formatterText(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: date)
    }

    /// Decodes a request body, turning every decoding problem into a 400 that names the field; a field the
    /// body's type does not know (a typo, a field of a newer client) is a 400 `unknown_field` naming it, never
    /// silently ignored; a key given twice is a 400 `duplicate_field`, a trailing comma a 400 `invalid_json`
    /// (`StrictJSON`, one scan before the decoder).
    static func decode<T: WireBody>(_ type: T.Type, from bytes: [UInt8], what: String) throws(APIError) -> T {
        guard !bytes.isEmpty else { throw .badRequest("invalid_json", "the \(what) body is empty; send a JSON object") }
        try StrictJSON.check(bytes, shape: T.shape, what: what)
        do {
            return try decoder().decode(T.self, from: Data(bytes))
        } catch let error as DecodingError {
            throw .badRequest("invalid_json", "the \(what) is not valid: \(describe(error))")
        } catch {
            throw .badRequest("invalid_json", "the \(what) is not valid JSON")
        }
    }

    static func describe(_ error: DecodingError) -> String {
        func path(_ context: DecodingError.Context) -> String {
            let joined = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
            return joined.isEmpty ? "the body" : String(joined.drop(while: { $0 == "." }))
        }
        switch error {
        case .keyNotFound(let key, let context):
            let at = path(context)
            return "missing field '\(key.stringValue)'" + (at == "the body" ? "" : " in \(at)")
        case .typeMismatch(_, let context), .valueNotFound(_, let context):
            return "\(path(context)): \(context.debugDescription)"
        case .dataCorrupted(let context):
            return "\(path(context)): \(context.debugDescription)"
        @unknown default:
            return "\(error)"
        }
    }
}

/// The fields a request body may hold, checked before decoding (`StrictJSON`): unknown fields are refused by name.
indirect enum WireShape: Sendable {
    /// A value checked by decoding (a string, number or date).
    case value
    case fields(Fields)
    case array(WireShape)

    /// An object's fields, each with its shape (fewer than 64).
    struct Fields: Sendable {
        /// Each field's position in `shapes`.
        let index: [String: Int]
        let shapes: [WireShape]
        /// The field names, sorted, for messages.
        let names: String
    }

    /// An object taking `fields`.
    static func object(_ fields: [String: WireShape]) -> WireShape {
        let sorted = fields.sorted { $0.key < $1.key }
        precondition(sorted.count < 64, "a body shape has fewer than 64 fields")
        return .fields(
            Fields(
                index: Dictionary(uniqueKeysWithValues: sorted.enumerated().map { ($1.key, $0) }),
                shapes: sorted.map(\.value), names: sorted.map(\.key).joined(separator: ", ")))
    }
}

/// A JSON request body: decodable, with the fields it takes.
protocol WireBody: Decodable {
    static var shape: WireShape { get }
}

/// A workout as the API returns it.
struct WorkoutBody: Encodable {
    var athlete: String
    var workout: Workout
}

/// `PUT /v1/sessions/{id}`: how the live session is set up.
struct SessionSetupBody: WireBody {
    static let shape = WireShape.object([
        "activityType": .value, "locationType": .value, "swimmingLocationType": .value, "lapLengthMeters": .value,
    ])

    var activityType: String
    var locationType: String?
    var swimmingLocationType: String?
    /// Pool length in metres, for pool swims.
    var lapLengthMeters: Double?
    /// The longest lap length taken, metres (docs/openapi.yaml says the same).
    static let longestLap: Double = 1_000_000

    func configuration() throws(APIError) -> WorkoutConfiguration {
        guard let type = WorkoutActivityType(rawValue: activityType) else {
            throw .unprocessable(
                "unknown_activity_type",
                "activityType '\(activityType)' is unknown; use one of "
                    + WorkoutActivityType.allCases.map(\.rawValue).joined(separator: ", "))
        }
        var configuration = WorkoutConfiguration(activityType: type)
        if let locationType {
            guard let location = LocationType(rawValue: locationType) else {
                throw .unprocessable("unknown_location_type", "locationType '\(locationType)' is not indoor, outdoor or unknown")
            }
            configuration.locationType = location
        }
        if let swimmingLocationType {
            guard let location = SwimmingLocationType(rawValue: swimmingLocationType) else {
                throw .unprocessable(
                    "unknown_location_type", "swimmingLocationType '\(swimmingLocationType)' is not pool, openWater or unknown")
            }
            configuration.swimmingLocationType = location
        }
        if let lapLengthMeters {
            guard lapLengthMeters.isFinite, lapLengthMeters > 0, lapLengthMeters <= Self.longestLap else {
                throw .unprocessable(
                    "invalid_lap_length",
                    "lapLengthMeters must be a number of metres above 0 and at most \(Int(Self.longestLap))")
            }
            configuration.lapLength = Quantity(lapLengthMeters, .meter)
        }
        return configuration
    }
}

/// One sample in a batch: the value in `unit` (the type's canonical unit when omitted).
struct SampleBody: Decodable {
    static let shape = WireShape.object([
        "type": .value, "value": .value, "unit": .value, "start": .value, "end": .value,
        "source": .object(["name": .value, "manufacturer": .value, "model": .value, "identifier": .value]),
    ])

    var type: String
    var value: Double
    var unit: String?
    var start: Date
    var end: Date?
    var source: SourceDevice?

    func sample(index: Int, defaultSource: SourceDevice) throws(APIError) -> QuantitySample {
        guard let quantityType = QuantityType(rawValue: type) else {
            throw .unprocessable(
                "unknown_quantity_type",
                "sample \(index): type '\(type)' is unknown; use one of "
                    + QuantityType.allCases.map(\.rawValue).joined(separator: ", "))
        }
        var quantityUnit = quantityType.canonicalUnit
        if let unit {
            guard let parsed = QuantityUnit(symbol: unit) else {
                throw .unprocessable(
                    "unknown_unit",
                    "sample \(index): unit '\(unit)' is unknown; use one of "
                        + QuantityUnit.known.map(\.symbol).joined(separator: ", "))
            }
            quantityUnit = parsed
        }
        guard quantityUnit.dimension == quantityType.canonicalUnit.dimension else {
            throw .unprocessable(
                "wrong_unit",
                "sample \(index): \(type) is measured in \(quantityType.canonicalUnit.dimension.rawValue) "
                    + "(e.g. \(quantityType.canonicalUnit.symbol)), not in \(quantityUnit.symbol) "
                    + "(\(quantityUnit.dimension.rawValue))")
        }
        if let source {
            // A NUL cannot be stored in PostgreSQL text (the commit failed with a 503 the client retried forever),
            // and control characters in a device name would reach terminals: refused on every backend alike.
            for field in [source.name, source.manufacturer, source.model, source.identifier].compactMap({ $0 })
            where field.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
                throw .unprocessable(
                    "invalid_source",
                    "sample \(index): the source's name, manufacturer, model and identifier must not contain control "
                        + "characters (such as U+0000)")
            }
        }
        let sample = QuantitySample(
            type: quantityType, quantity: Quantity(value, quantityUnit), start: start, end: end,
            source: source ?? defaultSource)
        do {
            _ = try sample.validate()
        } catch {
            throw .unprocessable("invalid_sample", "sample \(index): \(error)")
        }
        return sample
    }
}

/// One event in a batch.
struct EventBody: Decodable {
    static let shape = WireShape.object(["type": .value, "start": .value, "duration": .value])

    var type: String
    var start: Date
    var duration: Double?

    func event(index: Int) throws(APIError) -> WorkoutEvent {
        guard let eventType = WorkoutEventType(rawValue: type) else {
            throw .unprocessable(
                "unknown_event_type",
                "event \(index): type '\(type)' is unknown; use one of "
                    + WorkoutEventType.allCases.map(\.rawValue).joined(separator: ", "))
        }
        let duration = duration ?? 0
        guard duration.isFinite, duration >= 0, duration <= TimeBounds.longest else {
            throw .unprocessable(
                "invalid_event",
                "event \(index): duration must be a number of seconds from 0 to \(Int(TimeBounds.longest)) "
                    + "(\(TimeBounds.longestText)); got \(duration)")
        }
        return WorkoutEvent(type: eventType, start: start, duration: duration)
    }
}

/// A numbered batch of a live session: items applied in order, acknowledged after their commit.
struct BatchBody: WireBody {
    static let shape = WireShape.object(["seq": .value, "items": .array(BatchItemBody.shape)])

    var seq: Int
    var items: [BatchItemBody]
}

/// One step of a batch. `kind` is a session call (`start`, `pause`, `resume`, `stop`, `end`), `samples`,
/// `events`, a leg change (`leg` with `activityType`, or `nextLeg` for a planned multisport) or `endActivity`.
struct BatchItemBody: Decodable {
    static let shape = WireShape.object([
        "kind": .value, "at": .value, "samples": .array(SampleBody.shape), "events": .array(EventBody.shape),
        "activityType": .value,
    ])

    var kind: String
    var at: Date?
    var samples: [SampleBody]?
    var events: [EventBody]?
    var activityType: String?
}

/// The bounds of a live session's times: no sample, event or session longer than `longest`, no instant more
/// than `aheadOfClock` after the server's clock (docs/server-limits.md).
enum TimeBounds {
    /// The longest sample, event or session: 7 days, seconds.
    static let longest: TimeInterval = 7 * 86_400
    static let longestText = "7 days"
    /// How far after the server's clock an instant may be (clients' clocks drift): 10 minutes, seconds.
    static let aheadOfClock: TimeInterval = 10 * 60
    static let aheadOfClockText = "10 minutes"

    /// Refuses `date` (what it is the date of, for the message) when it is after `now` by more than `aheadOfClock`.
    static func check(_ date: Date, _ what: @autoclosure () -> String, now: Date) throws(APIError) {
        guard date.timeIntervalSince(now) <= aheadOfClock else {
            throw .unprocessable(
                "date_in_future",
                "\(what()) is \(Wire.formatDate(date)), more than \(aheadOfClockText) after the server's clock "
                    + "(\(Wire.formatDate(now))); check the device's clock")
        }
    }
}

/// A batch's steps with the earliest and latest instant they hold (nil for a batch without any).
struct CheckedBatch: Sendable {
    var steps: [BatchStep]
    var earliest: Date?
    var latest: Date?

    /// Refuses the batch when its instants and the session's start (nil before it started) would make a
    /// session longer than `TimeBounds.longest`.
    func checkSpan(sessionStart: Date?) throws(APIError) {
        guard let earliest, let latest else { return }
        let low = min(earliest, sessionStart ?? earliest)
        let high = max(latest, sessionStart ?? latest)
        guard high.timeIntervalSince(low) <= TimeBounds.longest else {
            throw .unprocessable(
                "session_too_long",
                "the batch's times run from \(Wire.formatDate(low)) to \(Wire.formatDate(high))"
                    + (sessionStart == nil ? "" : " with the session's start")
                    + ", longer than a session may last (\(TimeBounds.longestText)); check the device's clock, "
                    + "or record the rest in a new session")
        }
    }
}

/// A batch item checked and converted, ready to apply.
enum BatchStep: Sendable {
    case call(SessionCall)
    case samples([QuantitySample])
    case events([WorkoutEvent])
    case leg(WorkoutConfiguration, at: Date)
    case nextLeg(at: Date)
    case endActivity(at: Date)
}

extension BatchBody {
    /// Checks every item before anything is applied: a bad item refuses the whole batch. No instant may be more
    /// than `TimeBounds.aheadOfClock` after `now`, no sample or event longer than `TimeBounds.longest`.
    func steps(source: SourceDevice, now: Date = Date()) throws(APIError) -> CheckedBatch {
        var steps: [BatchStep] = []
        var sampleIndex = 0
        var eventIndex = 0
        var earliest: Date?
        var latest: Date?
        func note(_ date: Date) {
            if earliest.map({ date < $0 }) ?? true { earliest = date }
            if latest.map({ date > $0 }) ?? true { latest = date }
        }
        for (index, item) in items.enumerated() {
            func date() throws(APIError) -> Date {
                guard let at = item.at, at.timeIntervalSince1970.isFinite else {
                    throw .unprocessable("missing_date", "item \(index) (\(item.kind)) needs 'at', an ISO 8601 date")
                }
                try TimeBounds.check(at, "item \(index) (\(item.kind))", now: now)
                note(at)
                return at
            }
            switch item.kind {
            case "start": steps.append(.call(.start(at: try date())))
            case "pause": steps.append(.call(.pause(at: try date())))
            case "resume": steps.append(.call(.resume(at: try date())))
            case "stop": steps.append(.call(.stop(at: try date())))
            case "end": steps.append(.call(.end(at: try date(), reason: .user)))
            case "samples":
                var samples: [QuantitySample] = []
                for body in item.samples ?? [] {
                    let sample = try body.sample(index: sampleIndex, defaultSource: source)
                    try TimeBounds.check(sample.end, "sample \(sampleIndex)'s end", now: now)
                    guard sample.end.timeIntervalSince(sample.start) <= TimeBounds.longest else {
                        throw .unprocessable(
                            "invalid_sample",
                            "sample \(sampleIndex): it lasts longer than a sample may (\(TimeBounds.longestText))")
                    }
                    note(sample.start)
                    note(sample.end)
                    samples.append(sample)
                    sampleIndex += 1
                }
                steps.append(.samples(samples))
            case "events":
                var events: [WorkoutEvent] = []
                for body in item.events ?? [] {
                    let event = try body.event(index: eventIndex)
                    let end = event.start.addingTimeInterval(event.duration)
                    try TimeBounds.check(end, "event \(eventIndex)'s end", now: now)
                    note(event.start)
                    note(end)
                    events.append(event)
                    eventIndex += 1
                }
                steps.append(.events(events))
            case "leg":
                let setup = SessionSetupBody(activityType: item.activityType ?? "")
                steps.append(.leg(try setup.configuration(), at: try date()))
            case "nextLeg": steps.append(.nextLeg(at: try date()))
            case "endActivity": steps.append(.endActivity(at: try date()))
            default:
                throw .unprocessable(
                    "unknown_item_kind",
                    "item \(index): kind '\(item.kind)' is unknown; use start, pause, resume, stop, end, samples, "
                        + "events, leg, nextLeg or endActivity")
            }
        }
        return CheckedBatch(steps: steps, earliest: earliest, latest: latest)
    }
}
