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
                    in: container, debugDescription: "'\(text)' is not an ISO 8601 date (e.g. 2026-05-01T07:30:00Z)")
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

    /// A date of the wire: the common RFC 3339 forms by `FastISODate` (no formatter), anything else by
    /// Foundation's ISO 8601 formatters (a new formatter for each date cost a third of a loaded server's time).
    static func parseDate(_ text: String) -> Date? {
        if let date = FastISODate.parse(text) { return date }
        return formatterDate(text)
    }

    /// `parseDate` through Foundation's formatters only (the reference `FastISODate` is tested against).
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
    /// silently ignored.
    static func decode<T: WireBody>(_ type: T.Type, from bytes: [UInt8], what: String) throws(APIError) -> T {
        guard !bytes.isEmpty else { throw .badRequest("invalid_json", "the \(what) body is empty; send a JSON object") }
        if let tree = try? JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed]) {
            try T.shape.check(tree, at: "")
        }
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

/// The fields a request body may hold, checked before decoding: unknown fields are refused by name.
indirect enum WireShape: Sendable {
    /// A value checked by decoding (a string, number or date).
    case value
    case object([String: WireShape])
    case array(WireShape)

    func check(_ value: Any, at path: String) throws(APIError) {
        switch self {
        case .value: return
        case .array(let element):
            guard let array = value as? [Any] else { return }  // the decoder says what is wrong
            for (index, item) in array.enumerated() { try element.check(item, at: "\(path)[\(index)]") }
        case .object(let fields):
            guard let object = value as? [String: Any] else { return }
            for key in object.keys.sorted() {
                let field = path.isEmpty ? key : "\(path).\(key)"
                guard let shape = fields[key] else {
                    throw APIError(
                        status: 400, code: "unknown_field",
                        message: "unknown field '\(field.prefix(120))'; "
                            + (path.isEmpty ? "the body" : "'\(path.prefix(120))'") + " takes "
                            + fields.keys.sorted().joined(separator: ", "),
                        details: ["field": String(field.prefix(120))])
                }
                if let inner = object[key] { try shape.check(inner, at: field) }
            }
        }
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
            guard lapLengthMeters.isFinite, lapLengthMeters > 0 else {
                throw .unprocessable("invalid_lap_length", "lapLengthMeters must be a positive number of metres")
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
        guard duration.isFinite, duration >= 0 else {
            throw .unprocessable("invalid_event", "event \(index): duration must be a finite number of seconds >= 0")
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
    /// Checks every item before anything is applied: a bad item refuses the whole batch.
    func steps(source: SourceDevice) throws(APIError) -> [BatchStep] {
        var steps: [BatchStep] = []
        var sampleIndex = 0
        var eventIndex = 0
        for (index, item) in items.enumerated() {
            func date() throws(APIError) -> Date {
                guard let at = item.at, at.timeIntervalSince1970.isFinite else {
                    throw .unprocessable("missing_date", "item \(index) (\(item.kind)) needs 'at', an ISO 8601 date")
                }
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
                    samples.append(try body.sample(index: sampleIndex, defaultSource: source))
                    sampleIndex += 1
                }
                steps.append(.samples(samples))
            case "events":
                var events: [WorkoutEvent] = []
                for body in item.events ?? [] {
                    events.append(try body.event(index: eventIndex))
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
        return steps
    }
}
