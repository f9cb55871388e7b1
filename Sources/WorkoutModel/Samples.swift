import Foundation

/// Where a sample came from: a sensor, a watch, a file or a person.
///
/// Two samples belong to the same stream when they share type and source; the time-weighted
/// average holds a value until the next sample of the same stream.
public struct SourceDevice: Sendable, Hashable, Codable, CustomStringConvertible {
    /// A short human name, e.g. `HRM-Pro` or `ant:120:4711`.
    public var name: String
    public var manufacturer: String?
    public var model: String?
    /// A stable hardware identifier (ANT device number, BLE address, serial number).
    public var identifier: String?

    /// Empty optional fields are treated as absent, so "" and nil name the same source.
    public init(name: String, manufacturer: String? = nil, model: String? = nil, identifier: String? = nil) {
        self.name = name
        self.manufacturer = manufacturer.flatMap { $0.isEmpty ? nil : $0 }
        self.model = model.flatMap { $0.isEmpty ? nil : $0 }
        self.identifier = identifier.flatMap { $0.isEmpty ? nil : $0 }
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            name: try container.decode(String.self, forKey: .name),
            manufacturer: try container.decodeIfPresent(String.self, forKey: .manufacturer),
            model: try container.decodeIfPresent(String.self, forKey: .model),
            identifier: try container.decodeIfPresent(String.self, forKey: .identifier))
    }

    public var description: String { identifier.map { "\(name) (\($0))" } ?? name }
}

/// A measured quantity over an interval (or at an instant when start == end).
///
/// Discrete samples (heart rate, power) are readings that hold until the next reading of the same
/// stream; cumulative samples (distance, strokes) are amounts accumulated over `start...end`.
/// Construction never fails; `validate()` (and the builder) reject impossible samples.
public struct QuantitySample: Sendable, Hashable, Codable {
    public var type: QuantityType
    public var quantity: Quantity
    public var start: Date
    public var end: Date
    public var source: SourceDevice
    public var metadata: Metadata

    public init(
        type: QuantityType, quantity: Quantity, start: Date, end: Date? = nil, source: SourceDevice,
        metadata: Metadata = [:]
    ) {
        self.type = type
        self.quantity = quantity
        self.start = start
        self.end = end ?? start
        self.source = source
        self.metadata = metadata
    }

    /// Convenience: a sample whose value is given in `unit` (the type's canonical unit by default).
    public init(
        _ type: QuantityType, _ value: Double, _ unit: QuantityUnit? = nil, at start: Date, end: Date? = nil,
        source: SourceDevice, metadata: Metadata = [:]
    ) {
        self.init(
            type: type, quantity: Quantity(value, unit ?? type.canonicalUnit), start: start, end: end,
            source: source, metadata: metadata)
    }

    /// Seconds between start and end.
    public var duration: TimeInterval { end.timeIntervalSince(start) }

    /// Whether this is a heart-rate reading of the recovery window after the end of exercise
    /// (`MetadataKey.heartRateRecoveryReading`), not a reading of the exercise itself.
    public var isHeartRateRecoveryReading: Bool {
        metadata[MetadataKey.heartRateRecoveryReading] == .bool(true)
    }

    /// The value in the type's canonical unit, nil when the unit has the wrong dimension.
    @inlinable
    public var canonicalValue: Double? { quantity.unit.convert(quantity.value, to: type.canonicalUnit) }

    /// Checks the sample is physically possible; returns the value in the canonical unit.
    public func validate() throws(SampleValidationError) -> Double {
        guard start.timeIntervalSinceReferenceDate.isFinite, end.timeIntervalSinceReferenceDate.isFinite else {
            throw .invalidDate(type)
        }
        guard end >= start else { throw .endBeforeStart(type, start: start, end: end) }
        guard end.timeIntervalSince(start).isFinite else { throw .invalidDate(type) }
        guard quantity.value.isFinite else { throw .notFinite(type, quantity.value) }
        guard let value = canonicalValue else {
            throw .wrongDimension(type, unit: quantity.unit, expected: type.canonicalUnit.dimension)
        }
        let range = type.validRange
        guard range.contains(value) else {
            throw .outOfRange(type, value: value, unit: type.canonicalUnit, range: range)
        }
        if !metadata.isEmpty, let key = firstNonFiniteKey(metadata) { throw .invalidMetadata(type, key: key) }
        return value
    }
}

/// Why a sample is impossible.
public enum SampleValidationError: Error, Sendable, Equatable, CustomStringConvertible {
    case notFinite(QuantityType, Double)
    case wrongDimension(QuantityType, unit: QuantityUnit, expected: UnitDimension)
    case outOfRange(QuantityType, value: Double, unit: QuantityUnit, range: ClosedRange<Double>)
    case endBeforeStart(QuantityType, start: Date, end: Date)
    case invalidDate(QuantityType)
    case invalidMetadata(QuantityType, key: String)

    /// The short name used for drop counters.
    public var reason: DropReason {
        switch self {
        case .notFinite: .notFinite
        case .wrongDimension: .wrongDimension
        case .outOfRange: .outOfRange
        case .endBeforeStart, .invalidDate: .badInterval
        case .invalidMetadata: .invalidMetadata
        }
    }

    public var description: String {
        switch self {
        case .notFinite(let type, let value):
            "\(type.rawValue) sample has a non-finite value (\(value)); the sensor sent no real reading, drop it"
        case .wrongDimension(let type, let unit, let expected):
            "\(type.rawValue) sample is in '\(unit.symbol)' (\(unit.dimension.rawValue)) but the type needs a "
                + "\(expected.rawValue) unit such as '\(type.canonicalUnit.symbol)'; fix the unit at the source"
        case .outOfRange(let type, let value, let unit, let range):
            "\(type.rawValue) sample of \(value) \(unit.symbol) is outside the possible range "
                + "\(range.lowerBound)...\(range.upperBound) \(unit.symbol); check the sensor or decoder"
        case .endBeforeStart(let type, let start, let end):
            "\(type.rawValue) sample ends (\(end)) before it starts (\(start)); swap or fix the dates"
        case .invalidDate(let type):
            "\(type.rawValue) sample has a non-finite date or duration; fix the timestamp at the source"
        case .invalidMetadata(let type, let key):
            "\(type.rawValue) sample's metadata '\(key)' is not a finite value; drop the key or fix the value"
        }
    }
}

/// Why the engine dropped an input instead of recording it; each has a counter.
public enum DropReason: String, Sendable, Codable, Hashable, CaseIterable, CodingKeyRepresentable {
    case notFinite
    case wrongDimension
    case outOfRange
    case badInterval
    /// The sample lies outside the workout's start...end.
    case outsideWorkout
    /// Same type, source, start and value as a sample already taken.
    case duplicate
    /// Older than the reorder window allows for its stream.
    case tooLate
    /// The current activity's data source does not collect this type.
    case notCollected
    /// A pause while paused, a resume while running: normalised away.
    case redundantPauseOrResume
    /// A route point with an impossible coordinate.
    case badLocation
    /// Metadata with a NaN or infinite value.
    case invalidMetadata
}

/// A point of the GPS route.
public struct RoutePoint: Sendable, Hashable, Codable {
    public var date: Date
    /// Degrees, −90...90.
    public var latitude: Double
    /// Degrees, −180...180.
    public var longitude: Double
    /// Metres above mean sea level.
    public var altitude: Double?
    /// Metres per second over ground.
    public var speed: Double?
    /// Degrees from true north.
    public var course: Double?
    /// Horizontal accuracy in metres (HDOP-derived where that is all there is).
    public var horizontalAccuracy: Double?

    public init(
        date: Date, latitude: Double, longitude: Double, altitude: Double? = nil, speed: Double? = nil,
        course: Double? = nil, horizontalAccuracy: Double? = nil
    ) {
        self.date = date
        self.latitude = latitude
        self.longitude = longitude
        self.altitude = altitude
        self.speed = speed
        self.course = course
        self.horizontalAccuracy = horizontalAccuracy
    }

    /// Whether the coordinate is a real place on Earth and the optional values are finite.
    public var isValid: Bool {
        guard date.timeIntervalSinceReferenceDate.isFinite else { return false }
        guard (-90.0...90.0).contains(latitude), (-180.0...180.0).contains(longitude) else { return false }
        for value in [altitude, speed, course, horizontalAccuracy] {
            if let value, !value.isFinite { return false }
        }
        if let speed, speed < 0 { return false }
        return true
    }
}
