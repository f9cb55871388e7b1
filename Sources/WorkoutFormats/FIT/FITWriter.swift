/// Writes a FIT file: a 14-byte header with its CRC, definition and data messages, the file CRC.
///
/// Each message is written with exactly the fields it has; a definition message is written when a
/// message's layout (global number, fields, sizes, base types) is not one of the 16 local types in
/// use (least recently used replaced). All values are little-endian.
public struct FITWriter: Sendable {
    /// One field of a data message: its number, base type and little-endian bytes.
    public struct Field: Sendable, Hashable {
        public var number: UInt8
        public var baseType: UInt8
        public var bytes: [UInt8]

        /// A field of any base type from its little-endian bytes (arrays: the elements one after another).
        public init(number: UInt8, baseType: UInt8, bytes: [UInt8]) {
            self.number = number
            self.baseType = baseType
            self.bytes = bytes
        }

        /// An enum field; nil when absent.
        public static func enumeration(_ number: UInt8, _ value: UInt8?) -> Field? {
            value.map { Field(number: number, baseType: FITBaseType.enumeration, bytes: [$0]) }
        }

        public static func uint8(_ number: UInt8, _ value: UInt8?) -> Field? {
            value.map { Field(number: number, baseType: FITBaseType.uint8, bytes: [$0]) }
        }

        public static func uint16(_ number: UInt8, _ value: UInt16?) -> Field? {
            value.map { Field(number: number, baseType: FITBaseType.uint16, bytes: littleEndian(UInt64($0), 2)) }
        }

        public static func uint32(_ number: UInt8, _ value: UInt32?) -> Field? {
            value.map { Field(number: number, baseType: FITBaseType.uint32, bytes: littleEndian(UInt64($0), 4)) }
        }

        public static func uint32z(_ number: UInt8, _ value: UInt32?) -> Field? {
            value.map { Field(number: number, baseType: FITBaseType.uint32z, bytes: littleEndian(UInt64($0), 4)) }
        }

        public static func sint32(_ number: UInt8, _ value: Int32?) -> Field? {
            value.map {
                Field(
                    number: number, baseType: FITBaseType.sint32, bytes: littleEndian(UInt64(UInt32(bitPattern: $0)), 4)
                )
            }
        }

        /// A NUL-terminated UTF-8 string in `size` bytes (truncated to fit).
        public static func string(_ number: UInt8, _ value: String?, size: Int) -> Field? {
            guard let value, size > 1 else { return nil }
            var bytes = Array(value.utf8.prefix(size - 1))
            bytes += [UInt8](repeating: 0, count: size - bytes.count)
            return Field(number: number, baseType: FITBaseType.string, bytes: bytes)
        }

        /// A scaled unsigned value (`value × scale + offset × scale`, rounded); nil when absent or out of range.
        public static func scaled(
            _ number: UInt8, _ value: Double?, scale: Double, offset: Double = 0, size: Int
        )
            -> Field?
        {
            guard let value, value.isFinite else { return nil }
            let raw = ((value + offset) * scale).rounded()
            let limit = size == 1 ? 254.0 : size == 2 ? 65534.0 : 4_294_967_294.0
            guard raw >= 0, raw <= limit, let integer = UInt64(exactly: raw) else { return nil }
            switch size {
            case 1: return uint8(number, UInt8(integer))
            case 2: return uint16(number, UInt16(integer))
            default: return uint32(number, UInt32(integer))
            }
        }

        static func littleEndian(_ value: UInt64, _ size: Int) -> [UInt8] {
            (0..<size).map { UInt8(truncatingIfNeeded: value >> UInt64(8 * $0)) }
        }
    }

    private struct Layout: Hashable {
        var global: UInt16
        var fields: [UInt16]  // number << 8 | size for each field, then base types
        var types: [UInt8]
    }

    private var data: [UInt8] = []
    private var slots: [Layout?] = Array(repeating: nil, count: 16)
    private var lastUse: [Int] = Array(repeating: 0, count: 16)
    private var clock = 0

    public init() {}

    /// Bytes of messages written so far (without header and CRC).
    public var dataSize: Int { data.count }

    /// Appends a data message (fields that are nil are left out).
    public mutating func write(_ global: UInt16, _ fields: [Field?]) {
        let present = fields.compactMap { $0 }
        let layout = Layout(
            global: global, fields: present.map { UInt16($0.number) << 8 | UInt16(min($0.bytes.count, 255)) },
            types: present.map(\.baseType))
        clock += 1
        let local: Int
        if let found = slots.firstIndex(of: layout) {
            local = found
        } else {
            local = slots.firstIndex(of: nil) ?? lastUse.indices.min { lastUse[$0] < lastUse[$1] } ?? 0
            slots[local] = layout
            data.append(0x40 | UInt8(local))
            data.append(0)  // reserved
            data.append(0)  // little-endian
            data.append(UInt8(truncatingIfNeeded: global))
            data.append(UInt8(truncatingIfNeeded: global >> 8))
            data.append(UInt8(present.count))
            for field in present {
                data.append(field.number)
                data.append(UInt8(min(field.bytes.count, 255)))
                data.append(field.baseType)
            }
        }
        lastUse[local] = clock
        data.append(UInt8(local))
        for field in present { data.append(contentsOf: field.bytes.prefix(255)) }
    }

    /// The complete file: 14-byte header (protocol 2.0, profile 21.218) with CRC, the messages, the file CRC.
    public func finish() -> [UInt8] {
        var file: [UInt8] = [14, 0x20]
        file += Field.littleEndian(21218, 2)
        file += Field.littleEndian(UInt64(data.count), 4)
        file += Array(".FIT".utf8)
        file += Field.littleEndian(UInt64(FITCRC.checksum(file)), 2)
        file += data
        file += Field.littleEndian(UInt64(FITCRC.checksum(file)), 2)
        return file
    }
}
