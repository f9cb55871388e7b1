/// The physical dimension of a unit; values convert only within one dimension.
public enum UnitDimension: String, Sendable, Codable, Hashable, CaseIterable {
    /// Plain counts: strokes, steps, beats.
    case count
    /// Counts per unit time: heart rate, cadence.
    case frequency
    case length
    case speed
    case power
    case energy
    case time
}

/// A unit of measure with its dimension and its scale to the dimension's base unit.
///
/// Base units: `count`, `count/s`, `m`, `m/s`, `W`, `J`, `s`. A value `v` in this unit is
/// `v * scale` in the base unit. Units are compared by symbol, dimension and scale, so two
/// spellings of the same unit (say `rpm` and `count/min`) stay distinct symbols but convert
/// exactly. Codable as the bare symbol; decoding an unknown symbol fails.
public struct QuantityUnit: Sendable, Hashable, CustomStringConvertible {
    /// The symbol used in text, JSON and the CLI, e.g. `count/min`.
    public let symbol: String
    public let dimension: UnitDimension
    /// Multiply by this to get the dimension's base unit.
    public let scale: Double

    /// Creates a unit; prefer the predefined constants and `QuantityUnit(symbol:)`.
    public init(symbol: String, dimension: UnitDimension, scale: Double) {
        self.symbol = symbol
        self.dimension = dimension
        self.scale = scale
    }

    public var description: String { symbol }

    public static let count = QuantityUnit(symbol: "count", dimension: .count, scale: 1)
    public static let countPerMinute = QuantityUnit(symbol: "count/min", dimension: .frequency, scale: 1.0 / 60)
    public static let countPerSecond = QuantityUnit(symbol: "count/s", dimension: .frequency, scale: 1)
    public static let hertz = QuantityUnit(symbol: "Hz", dimension: .frequency, scale: 1)
    public static let meter = QuantityUnit(symbol: "m", dimension: .length, scale: 1)
    public static let centimeter = QuantityUnit(symbol: "cm", dimension: .length, scale: 0.01)
    public static let kilometer = QuantityUnit(symbol: "km", dimension: .length, scale: 1000)
    public static let yard = QuantityUnit(symbol: "yd", dimension: .length, scale: 0.9144)
    public static let mile = QuantityUnit(symbol: "mi", dimension: .length, scale: 1609.344)
    public static let meterPerSecond = QuantityUnit(symbol: "m/s", dimension: .speed, scale: 1)
    public static let kilometerPerHour = QuantityUnit(symbol: "km/h", dimension: .speed, scale: 1000.0 / 3600)
    public static let milePerHour = QuantityUnit(symbol: "mi/h", dimension: .speed, scale: 1609.344 / 3600)
    public static let watt = QuantityUnit(symbol: "W", dimension: .power, scale: 1)
    public static let joule = QuantityUnit(symbol: "J", dimension: .energy, scale: 1)
    public static let kilojoule = QuantityUnit(symbol: "kJ", dimension: .energy, scale: 1000)
    public static let kilocalorie = QuantityUnit(symbol: "kcal", dimension: .energy, scale: 4184)
    public static let millisecond = QuantityUnit(symbol: "ms", dimension: .time, scale: 0.001)
    public static let second = QuantityUnit(symbol: "s", dimension: .time, scale: 1)
    public static let minute = QuantityUnit(symbol: "min", dimension: .time, scale: 60)
    public static let hour = QuantityUnit(symbol: "h", dimension: .time, scale: 3600)

    /// Every predefined unit, the set `init(symbol:)` understands.
    public static let known: [QuantityUnit] = [
        .count, .countPerMinute, .countPerSecond, .hertz, .meter, .centimeter, .kilometer, .yard,
        .mile, .meterPerSecond, .kilometerPerHour, .milePerHour, .watt, .joule, .kilojoule,
        .kilocalorie, .millisecond, .second, .minute, .hour,
    ]

    private static let bySymbol: [String: QuantityUnit] = {
        var table = Dictionary(uniqueKeysWithValues: known.map { ($0.symbol, $0) })
        table["bpm"] = .countPerMinute
        table["rpm"] = .countPerMinute
        table["spm"] = .countPerMinute
        return table
    }()

    /// Looks up a predefined unit by symbol (`count/min`, `bpm`, `km`, `W` …); nil if unknown.
    public init?(symbol: String) {
        guard let unit = Self.bySymbol[symbol] else { return nil }
        self = unit
    }

    /// Converts `value` in this unit to `other`; nil when the dimensions differ.
    @inlinable
    public func convert(_ value: Double, to other: QuantityUnit) -> Double? {
        guard dimension == other.dimension else { return nil }
        if scale == other.scale { return value }
        return value * scale / other.scale
    }
}

extension QuantityUnit: Codable {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let symbol = try container.decode(String.self)
        guard let unit = QuantityUnit(symbol: symbol) else {
            throw DecodingError.dataCorruptedError(
                in: container,
                debugDescription: "unknown unit '\(symbol)'; known units: "
                    + QuantityUnit.known.map(\.symbol).joined(separator: ", "))
        }
        self = unit
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(symbol)
    }
}

/// A value with its unit.
public struct Quantity: Sendable, Hashable, Codable, CustomStringConvertible {
    public var value: Double
    public var unit: QuantityUnit

    public init(_ value: Double, _ unit: QuantityUnit) {
        self.value = value
        self.unit = unit
    }

    /// The value expressed in `unit`; nil when the dimensions differ.
    public func doubleValue(for unit: QuantityUnit) -> Double? {
        self.unit.convert(value, to: unit)
    }

    /// Whether the quantity can be expressed in `unit`.
    public func isCompatible(with unit: QuantityUnit) -> Bool {
        self.unit.dimension == unit.dimension
    }

    public var description: String { "\(value) \(unit.symbol)" }
}
