import Foundation

/// A metadata value: the closed set of value kinds HealthKit metadata allows, plus quantities.
public enum MetadataValue: Sendable, Hashable, Codable {
    case string(String)
    case double(Double)
    case int(Int)
    case bool(Bool)
    case date(Date)
    case quantity(Quantity)
}

/// Metadata keyed by string; keys are free-form, the engine's own keys are in `MetadataKey`.
public typealias Metadata = [String: MetadataValue]

extension MetadataValue {
    /// False for values that cannot be stored faithfully: NaN or infinite numbers, dates and quantities.
    public var isFinite: Bool {
        switch self {
        case .double(let value): value.isFinite
        case .date(let date): date.timeIntervalSinceReferenceDate.isFinite
        case .quantity(let quantity): quantity.value.isFinite
        case .string, .int, .bool: true
        }
    }
}

/// The first key whose value is not finite, if any.
public func firstNonFiniteKey(_ metadata: Metadata) -> String? {
    metadata.keys.sorted().first { metadata[$0]?.isFinite == false }
}

/// Keys the engine itself writes or reads.
public enum MetadataKey {
    /// Lap length of a pool swim (`quantity`, length).
    public static let lapLength = "LapLength"
}
