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

/// Keys the engine itself writes or reads.
public enum MetadataKey {
    /// Lap length of a pool swim (`quantity`, length).
    public static let lapLength = "LapLength"
    /// Set on a workout or activity built from a recovered journal (`bool`).
    public static let recovered = "Recovered"
}
