/// Streaming decoder of ANT serial messages (a USB ANT stick, an ANT UART module) with the ANT+ pages
/// of heart-rate, bike speed and cadence, bike cadence, bike speed, bicycle power, foot-pod and
/// fitness-equipment (FE-C) sensors, and the common pages 80 and 81.
///
/// Frames are `A4`, length, id, payload, checksum (XOR of everything before it, the sync included).
/// A frame with a bad checksum is dropped and counted, and the decoder resynchronises from the byte
/// after its sync (the real frame may start inside it). A length above `maxPayload` cannot be a frame:
/// the sync byte is skipped.
///
/// Messages: broadcast (0x4E) and acknowledged (0x4F) data are decoded by their device: the channel id
/// an extended message carries (flag 0x80: device number, type, transmission type), else the device
/// the channel was last told of (a channel-id response 0x51, an earlier extended message, or
/// `Configuration.channels`); data on a channel whose device is unknown is counted as unknown.
/// State (previous counters, event times) is kept per device, not per channel, so a scanning
/// channel that hears several devices computes each one's rates from its own messages. Channel
/// events and responses (0x40), startup (0x6F) and serial errors (0xAE) are reported; a channel event
/// that means the device is gone (search timeout 0x01, channel closed 0x07, RX fail go to search
/// 0x08) drops that device's previous values, so nothing is computed across the gap. Other message
/// ids, and pages the decoder does not interpret, are counted as unknown.
///
/// Rates come from differences between consecutive messages of a device, counters rolling over as
/// the profiles say. When no new revolution (or power event) arrived, the last value is held until
/// `Configuration.stopAfterMessages` messages in a row brought nothing new, then 0 is reported
/// (12 messages is 3 s at the ANT+ 4 Hz message rate). Sensors resend their latest page about 4
/// times a second: a message whose readings equal its device's previous message's adds none (it
/// is counted in `DecoderCounters.repeatedMessages`), so a held value is reported once.
public struct ANTDecoder: SensorDecoder {
    /// What the decoder needs to know beyond the bytes.
    public struct Configuration: Sendable, Hashable {
        /// Wheel circumference for bike speed, metres (the simulator's wheel: 2.105 m, a 700×25c tyre).
        public var wheelCircumference: Double
        /// Messages without a new revolution or event after which speed, cadence and power read 0.
        public var stopAfterMessages: Int
        /// Devices of channels known beforehand (the host assigned them), by channel number.
        public var channels: [UInt8: ANTDeviceID]
        /// The longest payload accepted (extended messages with every flag fit in 32).
        public var maxPayload: Int
        /// The most devices whose state is kept at once (a scan in a crowded room); beyond, the
        /// states start afresh.
        public var maxDevices: Int

        public init(
            wheelCircumference: Double = 2.105, stopAfterMessages: Int = 12, channels: [UInt8: ANTDeviceID] = [:],
            maxPayload: Int = 32, maxDevices: Int = 64
        ) {
            self.wheelCircumference = wheelCircumference
            self.stopAfterMessages = stopAfterMessages
            self.channels = channels
            self.maxPayload = maxPayload
            self.maxDevices = maxDevices
        }
    }

    public let configuration: Configuration
    public private(set) var counters = DecoderCounters()
    private var carry = CarryBuffer()
    private var channelDevices: [UInt8: ANTDeviceID] = [:]
    private var devices: [ANTDeviceID: DeviceState] = [:]
    private let circumference: Double

    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
        let circumference = configuration.wheelCircumference
        self.circumference = circumference.isFinite && circumference > 0 ? circumference : 2.105
        channelDevices = configuration.channels
    }

    /// The device of `channel`, when known.
    public func device(onChannel channel: UInt8) -> ANTDeviceID? {
        channelDevices[channel]
    }

    /// Bytes of a frame not yet complete.
    public var pendingByteCount: Int { carry.bytes.count }

    public mutating func decode(_ chunk: UnsafeRawBufferPointer, into readings: inout [SensorReading]) {
        counters.bytesConsumed &+= chunk.count
        var carry = CarryBuffer()
        swap(&carry, &self.carry)
        carry.feed(chunk) { bytes in scanFrames(bytes, into: &readings) }
        swap(&carry, &self.carry)
    }

    public mutating func connectionLost() {
        counters.bytesDroppedOnDisconnect &+= carry.removeAll()
        for key in devices.keys { devices[key]?.restart() }
    }

    private mutating func scanFrames(_ bytes: UnsafeRawBufferPointer, into readings: inout [SensorReading]) -> Int {
        let count = bytes.count
        let maxPayload = configuration.maxPayload
        var index = 0
        while index < count {
            guard bytes[index] == ANT.sync else {
                counters.resyncBytesSkipped &+= 1
                index &+= 1
                continue
            }
            guard index &+ 1 < count else { return index }
            let length = Int(bytes[index &+ 1])
            guard length >= 1, length <= maxPayload else {
                counters.resyncBytesSkipped &+= 1  // not a frame's start
                index &+= 1
                continue
            }
            let end = index &+ length &+ 4
            guard end <= count else { return index }
            var sum: UInt8 = 0
            for offset in index..<(end &- 1) { sum ^= bytes[offset] }
            guard sum == bytes[end &- 1] else {
                counters.badChecksums &+= 1
                counters.resyncBytesSkipped &+= 1
                index &+= 1
                continue
            }
            let payload = UnsafeRawBufferPointer(rebasing: bytes[(index &+ 3)..<(end &- 1)])
            switch message(bytes[index &+ 2], payload, into: &readings) {
            case .decoded: counters.framesDecoded &+= 1
            case .malformed: counters.malformedFrames &+= 1
            case .unknown, .unsupportedVersion: counters.unknownMessages &+= 1
            }
            index = end
        }
        return count
    }

    private mutating func message(
        _ id: UInt8, _ payload: UnsafeRawBufferPointer, into readings: inout [SensorReading]
    )
        -> LineOutcome
    {
        switch id {
        case 0x4E, 0x4F:  // broadcast, acknowledged data
            guard payload.count >= 9 else { return .malformed }
            let channel = payload[0]
            if payload.count >= 14, payload[9] & 0x80 != 0 {  // extended: the channel id follows
                let device = ANTDeviceID(
                    number: LittleEndian.u16(payload, 10), type: payload[12], transmissionType: payload[13])
                if device.type != 0 { setDevice(device, onChannel: channel) }
            }
            guard let device = channelDevices[channel], device.type != 0 else { return .unknown }
            let data = UnsafeRawBufferPointer(rebasing: payload[1..<9])
            let source = ReadingSource.ant(channel: channel, device: device)
            if devices[device] == nil {
                if devices.count >= max(1, configuration.maxDevices) { devices.removeAll() }
                devices[device] = DeviceState()
            }
            let stopAfter = configuration.stopAfterMessages
            let circumference = circumference
            // A sensor repeats its latest page about 4 times a second: a message that says nothing new
            // (the same readings as the device's previous message) still counts (stop timeouts), but
            // adds no reading.
            var fresh: [SensorReading] = []
            let decoded =
                devices[device]?.decode(
                    data, type: device.type, source: source, circumference: circumference, stopAfter: stopAfter,
                    into: &fresh) ?? false
            if fresh != devices[device]?.lastReadings {
                devices[device]?.lastReadings = fresh
                readings.append(contentsOf: fresh)
            } else {
                counters.repeatedMessages &+= 1
            }
            return decoded ? .decoded : .unknown
        case 0x51:  // channel id
            guard payload.count >= 5 else { return .malformed }
            let channel = payload[0]
            let device = ANTDeviceID(
                number: LittleEndian.u16(payload, 1), type: payload[3], transmissionType: payload[4])
            if device.type != 0 { setDevice(device, onChannel: channel) }
            readings.append(SensorReading(source: .ant(channel: channel, device: device), value: .antChannelID(device)))
            return .decoded
        case 0x40:  // channel event or response
            guard payload.count >= 3 else { return .malformed }
            let channel = payload[0]
            let device = channelDevices[channel]
            if payload[1] == 0x01, payload[2] == 0x01 || payload[2] == 0x07 || payload[2] == 0x08, let device {
                devices[device]?.restart()  // the device is gone: nothing is computed across the gap
            }
            readings.append(
                SensorReading(
                    source: .ant(channel: channel, device: device),
                    value: .antChannelEvent(messageID: payload[1], code: payload[2])))
            return .decoded
        case 0x6F:  // startup: the chip reset, its channels are closed
            guard payload.count >= 1 else { return .malformed }
            for key in devices.keys { devices[key]?.restart() }
            readings.append(
                SensorReading(source: .ant(channel: nil, device: nil), value: .antStartup(reason: payload[0])))
            return .decoded
        case 0xAE:  // serial error
            guard payload.count >= 1 else { return .malformed }
            readings.append(
                SensorReading(source: .ant(channel: nil, device: nil), value: .antSerialError(code: payload[0])))
            return .decoded
        default:
            return .unknown
        }
    }

    private mutating func setDevice(_ device: ANTDeviceID, onChannel channel: UInt8) {
        guard channelDevices[channel] != device else { return }
        channelDevices[channel] = device
    }
}

/// Messages in a row of one page that brought no new event (the crank or wheel not turning): a device holds its
/// last event while it stands, and after `stopAfter` such messages its rate is 0 (power, cadence, speed).
private struct IdleCounter: Sendable {
    private var count = 0

    /// A message with a new event: the count starts again.
    mutating func reset() { count = 0 }

    /// One more message without a new event; whether there have now been `stopAfter` or more in a row.
    mutating func idle(stopAfter: Int) -> Bool {
        count = min(count &+ 1, Int.max / 2)
        return count >= stopAfter
    }
}

/// Per-device profile state: the previous values that rates and deltas are computed from.
private struct DeviceState: Sendable {
    /// The readings of the device's previous message (a repeat of them adds nothing).
    var lastReadings: [SensorReading] = []
    // Heart rate
    var hasBeat = false
    var lastBeatCount: UInt8 = 0
    var lastBeatTime: UInt16 = 0
    // Speed and cadence
    var wheel = RevolutionTracker()
    var crank = RevolutionTracker()
    // Power page 0x10
    var hasPower = false
    var lastPowerEvent: UInt8 = 0
    var lastAccumulatedPower: UInt16 = 0
    var powerIdle = IdleCounter()
    // Crank torque page 0x12
    var hasTorque = false
    var lastTorqueEvent: UInt8 = 0
    var lastCrankPeriod: UInt16 = 0
    var lastAccumulatedTorque: UInt16 = 0
    var torqueIdle = IdleCounter()
    // Foot pod page 1
    var hasStride = false
    var lastDistance: UInt16 = 0  // 1/16 m, 12 bits
    var lastStrides: UInt8 = 0
    var totalDistance: UInt64 = 0  // 1/16 m
    var totalStrides = 0
    // Wheel torque page 0x11
    var hasWheelTorque = false
    var lastWheelEvent: UInt8 = 0
    var lastWheelTicks: UInt8 = 0
    var lastWheelPeriod: UInt16 = 0
    var lastWheelTorque: UInt16 = 0
    var wheelTorqueIdle = IdleCounter()
    var wheelTicksTotal: UInt64 = 0
    // Crank torque frequency page 0x20 (offset from calibration page 0x01)
    var hasFrequency = false
    var lastFrequencyEvent: UInt8 = 0
    var lastFrequencyTime: UInt16 = 0
    var lastTorqueTicks: UInt16 = 0
    var frequencyIdle = IdleCounter()
    var torqueFrequencyOffset: Double?
    // Fitness equipment
    var equipmentType: UInt8?
    var hasFEDistance = false
    var lastFEDistance: UInt8 = 0
    var feDistance: UInt64 = 0
    var hasFEPower = false
    var lastFEEvent: UInt8 = 0
    var lastFEAccumulated: UInt16 = 0
    var fePowerIdle = IdleCounter()

    mutating func restart() {
        lastReadings = []
        hasWheelTorque = false
        wheelTorqueIdle.reset()
        hasFrequency = false
        frequencyIdle.reset()
        hasFEDistance = false
        hasFEPower = false
        fePowerIdle.reset()
        hasBeat = false
        wheel.restart()
        crank.restart()
        hasPower = false
        powerIdle.reset()
        hasTorque = false
        torqueIdle.reset()
        hasStride = false
    }

    /// Decodes the 8 data bytes of a broadcast for a device of `type` and appends the reading; false for
    /// a page not handled. (Readings are built in the append: they are large, copies cost.)
    mutating func decode(
        _ data: UnsafeRawBufferPointer, type: UInt8, source: ReadingSource, circumference: Double, stopAfter: Int,
        into readings: inout [SensorReading]
    ) -> Bool {
        let page = data[0] & 0x7F
        if data[0] == 0x50 || data[0] == 0x51,
            type == ANT.DeviceType.bicyclePower.rawValue || type == ANT.DeviceType.footPod.rawValue
                || type == ANT.DeviceType.fitnessEquipment.rawValue
        {
            // Common pages 80 (manufacturer's information) and 81 (product information). (Speed and
            // cadence, 121, has no page byte: its byte 0 is the crank event time.)
            readings.append(SensorReading(source: source, value: .antDeviceInfo(Self.commonPage(data))))
            return true
        }
        switch type {
        case ANT.DeviceType.heartRate.rawValue:
            readings.append(SensorReading(source: source, value: .heartRate(heartRate(data))))
            if page == 2 {
                // Manufacturer id, and the upper 16 bits of the serial number.
                readings.append(
                    SensorReading(
                        source: source,
                        value: .antDeviceInfo(
                            ANTDeviceInfo(manufacturer: UInt16(data[1]), serial: UInt32(LittleEndian.u16(data, 2)) << 16))))
            } else if page == 3 {
                readings.append(
                    SensorReading(
                        source: source,
                        value: .antDeviceInfo(
                            ANTDeviceInfo(model: UInt16(data[3]), hardwareVersion: data[1], softwareVersion: Int(data[2])))))
            }
        case ANT.DeviceType.bikeSpeedCadence.rawValue:
            readings.append(
                SensorReading(
                    source: source,
                    value: .speedCadence(
                        speedCadence(
                            crankTime: LittleEndian.u16(data, 0), crankCount: LittleEndian.u16(data, 2),
                            wheelTime: LittleEndian.u16(data, 4), wheelCount: LittleEndian.u16(data, 6),
                            circumference: circumference, stopAfter: stopAfter))))
        case ANT.DeviceType.bikeCadence.rawValue:
            readings.append(
                SensorReading(
                    source: source,
                    value: .speedCadence(
                        speedCadence(
                            crankTime: LittleEndian.u16(data, 4), crankCount: LittleEndian.u16(data, 6), wheelTime: nil,
                            wheelCount: nil, circumference: circumference, stopAfter: stopAfter))))
        case ANT.DeviceType.bikeSpeed.rawValue:
            readings.append(
                SensorReading(
                    source: source,
                    value: .speedCadence(
                        speedCadence(
                            crankTime: nil, crankCount: nil, wheelTime: LittleEndian.u16(data, 4),
                            wheelCount: LittleEndian.u16(data, 6), circumference: circumference, stopAfter: stopAfter)))
            )
        case ANT.DeviceType.bicyclePower.rawValue:
            switch data[0] {
            case 0x10:
                readings.append(SensorReading(source: source, value: .power(powerOnly(data, stopAfter: stopAfter))))
            case 0x11:
                readings.append(
                    SensorReading(
                        source: source,
                        value: .power(wheelTorque(data, circumference: circumference, stopAfter: stopAfter))))
            case 0x12:
                readings.append(SensorReading(source: source, value: .power(crankTorque(data, stopAfter: stopAfter))))
            case 0x20:
                readings.append(SensorReading(source: source, value: .power(torqueFrequency(data, stopAfter: stopAfter))))
            case 0x01 where data[1] == 0x10 && data[2] == 0x01:
                // Crank torque frequency calibration: the zero offset (Hz), big-endian.
                torqueFrequencyOffset = Double(UInt16(data[6]) << 8 | UInt16(data[7]))
                return false
            default: return false
            }
        case ANT.DeviceType.fitnessEquipment.rawValue:
            guard let reading = fitnessEquipment(data, stopAfter: stopAfter) else { return false }
            readings.append(SensorReading(source: source, value: .fitnessEquipment(reading)))
        case ANT.DeviceType.footPod.rawValue:
            let page = data[0] & 0x7F
            switch page {
            case 1: readings.append(SensorReading(source: source, value: .stride(footPodPage1(data))))
            case 2...15:
                let cadence = Double(data[3]) + Double(data[4] >> 4) / 16
                let speed = Double(data[4] & 0x0F) + Double(data[5]) / 256
                readings.append(
                    SensorReading(
                        source: source,
                        value: .stride(StrideReading(page: page, speed: speed, stepsPerMinute: cadence * 2))))
            default: return false
            }
        default: return false
        }
        return true
    }

    /// Any heart-rate page: bytes 4–5 beat time, 6 beat count, 7 computed heart rate; page 4 bytes 2–3
    /// the previous beat's time. Bit 7 of the page number is the toggle bit.
    private mutating func heartRate(_ data: UnsafeRawBufferPointer) -> HeartRateReading {
        let page = data[0] & 0x7F
        let beatTime = LittleEndian.u16(data, 4)
        let beatCount = data[6]
        var rr = RRIntervals()
        var newBeats: Int?
        let previous: UInt16? = page == 4 ? LittleEndian.u16(data, 2) : nil
        if hasBeat {
            let beats = beatCount &- lastBeatCount
            newBeats = Int(beats)
            if beats > 0 {
                if let previous {
                    let ticks = beatTime &- previous
                    if ticks > 0 { rr.append(ticks: ticks) }
                } else if beats == 1 {
                    let ticks = beatTime &- lastBeatTime
                    if ticks > 0 { rr.append(ticks: ticks) }
                }
            }
        } else if let previous {
            let ticks = beatTime &- previous
            if ticks > 0 { rr.append(ticks: ticks) }
        }
        hasBeat = true
        lastBeatCount = beatCount
        lastBeatTime = beatTime
        return HeartRateReading(
            beatsPerMinute: Int(data[7]), rrIntervals: rr, page: page, beatCount: beatCount,
            beatEventTime: Double(beatTime) / 1024, newBeats: newBeats)
    }

    private mutating func speedCadence(
        crankTime: UInt16?, crankCount: UInt16?, wheelTime: UInt16?, wheelCount: UInt16?, circumference: Double,
        stopAfter: Int
    ) -> SpeedCadenceReading {
        var reading = SpeedCadenceReading()
        if let wheelTime, let wheelCount {
            let rate = wheel.update(
                count: UInt32(wheelCount), countMask: 0xFFFF, time: wheelTime, ticksPerSecond: 1024, elapsed: 1,
                stopAfter: stopAfter)
            reading.wheel = RevolutionData(revolutions: UInt32(wheelCount), eventTime: Double(wheelTime) / 1024)
            reading.speed = rate.map { $0 * circumference }
            reading.distance = Double(wheel.total) * circumference
        }
        if let crankTime, let crankCount {
            let rate = crank.update(
                count: UInt32(crankCount), countMask: 0xFFFF, time: crankTime, ticksPerSecond: 1024, elapsed: 1,
                stopAfter: stopAfter)
            reading.crank = RevolutionData(revolutions: UInt32(crankCount), eventTime: Double(crankTime) / 1024)
            reading.cadence = rate.map { $0 * 60 }
        }
        return reading
    }

    /// Page 0x10: event count, pedal balance, cadence, accumulated power, instantaneous power.
    private mutating func powerOnly(_ data: UnsafeRawBufferPointer, stopAfter: Int) -> PowerReading {
        let event = data[1]
        let accumulated = LittleEndian.u16(data, 4)
        var average: Double?
        if hasPower {
            let events = event &- lastPowerEvent
            if events > 0 {
                average = Double(accumulated &- lastAccumulatedPower) / Double(events)
                powerIdle.reset()
            } else if powerIdle.idle(stopAfter: stopAfter) {
                average = 0
            }
        }
        hasPower = true
        lastPowerEvent = event
        lastAccumulatedPower = accumulated
        var balance: PedalBalance?
        if data[2] != 0xFF {
            balance = PedalBalance(percent: Double(data[2] & 0x7F), pedal: data[2] & 0x80 != 0 ? .right : .unknown)
        }
        return PowerReading(
            page: 0x10, instantaneousPower: Int(LittleEndian.u16(data, 6)), averagePower: average,
            cadence: data[3] == 0xFF ? nil : Double(data[3]), pedalBalance: balance, eventCount: event,
            accumulatedPower: accumulated)
    }

    /// Page 0x12: event count, crank ticks, cadence, accumulated crank period (1/2048 s), accumulated
    /// torque (1/32 N·m). Average power = 128π × Δtorque / Δperiod; cadence = 60 × Δevents / (Δperiod /
    /// 2048); events with no period (the crank not turning) mean 0.
    private mutating func crankTorque(_ data: UnsafeRawBufferPointer, stopAfter: Int) -> PowerReading {
        let event = data[1]
        let period = LittleEndian.u16(data, 4)
        let torque = LittleEndian.u16(data, 6)
        var reading = PowerReading(page: 0x12, eventCount: event, accumulatedTorque: torque)
        if hasTorque {
            let events = event &- lastTorqueEvent
            if events > 0 {
                torqueIdle.reset()
                let ticks = period &- lastCrankPeriod
                let torqueDelta = Double(torque &- lastAccumulatedTorque)
                if ticks > 0 {
                    reading.averagePower = 128 * Double.pi * torqueDelta / Double(ticks)
                    reading.cadence = 60 * Double(events) * 2048 / Double(ticks)
                    reading.averageTorque = torqueDelta / (32 * Double(events))
                } else {
                    reading.averagePower = 0
                    reading.cadence = 0
                    reading.averageTorque = 0
                }
            } else if torqueIdle.idle(stopAfter: stopAfter) {
                reading.averagePower = 0
                reading.cadence = 0
            }
        }
        if reading.cadence == nil, data[3] != 0xFF { reading.cadence = Double(data[3]) }
        hasTorque = true
        lastTorqueEvent = event
        lastCrankPeriod = period
        lastAccumulatedTorque = torque
        return reading
    }

    /// Common page 80 (hardware revision, manufacturer id, model) or 81 (software version, serial).
    static func commonPage(_ data: UnsafeRawBufferPointer) -> ANTDeviceInfo {
        if data[0] == 0x50 {
            return ANTDeviceInfo(
                manufacturer: LittleEndian.u16(data, 4), model: LittleEndian.u16(data, 6), hardwareVersion: data[3])
        }
        let serial = UInt32(LittleEndian.u16(data, 4)) | UInt32(LittleEndian.u16(data, 6)) << 16
        let main = Int(data[3])
        return ANTDeviceInfo(
            serial: serial == 0xFFFF_FFFF ? nil : serial, softwareVersion: data[2] == 0xFF ? main : main * 100 + Int(data[2]))
    }

    /// Page 0x11 (wheel torque): event count, wheel ticks, cadence, accumulated wheel period (1/2048 s),
    /// accumulated torque (1/32 N·m). Average power = 128π × Δtorque / Δperiod; speed = circumference ×
    /// Δevents × 2048 / Δperiod; distance = circumference × wheel ticks.
    private mutating func wheelTorque(_ data: UnsafeRawBufferPointer, circumference: Double, stopAfter: Int)
        -> PowerReading
    {
        let event = data[1]
        let ticks = data[2]
        let period = LittleEndian.u16(data, 4)
        let torque = LittleEndian.u16(data, 6)
        var reading = PowerReading(page: 0x11, eventCount: event, accumulatedTorque: torque)
        if data[3] != 0xFF { reading.cadence = Double(data[3]) }
        if hasWheelTorque {
            wheelTicksTotal &+= UInt64(ticks &- lastWheelTicks)
            let events = event &- lastWheelEvent
            if events > 0 {
                wheelTorqueIdle.reset()
                let periodTicks = period &- lastWheelPeriod
                let torqueDelta = Double(torque &- lastWheelTorque)
                if periodTicks > 0 {
                    reading.averagePower = 128 * Double.pi * torqueDelta / Double(periodTicks)
                    reading.speed = circumference * Double(events) * 2048 / Double(periodTicks)
                    reading.averageTorque = torqueDelta / (32 * Double(events))
                } else {
                    reading.averagePower = 0
                    reading.speed = 0
                }
            } else if wheelTorqueIdle.idle(stopAfter: stopAfter) {
                reading.averagePower = 0
                reading.speed = 0
            }
        }
        hasWheelTorque = true
        lastWheelEvent = event
        lastWheelTicks = ticks
        lastWheelPeriod = period
        lastWheelTorque = torque
        return reading
    }

    /// Page 0x20 (crank torque frequency; big-endian fields): event count, slope (1/10 N·m/Hz), time
    /// stamp (1/2000 s), torque ticks stamp. Cadence = 60 × Δevents / Δtime; torque = (Δticks / Δtime −
    /// offset) / (slope / 10); power = torque × cadence × π / 30. Power needs the offset of a
    /// calibration page (0x01, 0x10, 0x01); until one came, only the cadence is given.
    private mutating func torqueFrequency(_ data: UnsafeRawBufferPointer, stopAfter: Int) -> PowerReading {
        let event = data[1]
        let slope = Double(UInt16(data[2]) << 8 | UInt16(data[3])) / 10
        let time = UInt16(data[4]) << 8 | UInt16(data[5])
        let ticks = UInt16(data[6]) << 8 | UInt16(data[7])
        var reading = PowerReading(page: 0x20, eventCount: event)
        if hasFrequency {
            let events = event &- lastFrequencyEvent
            if events > 0 {
                frequencyIdle.reset()
                let elapsed = Double(time &- lastFrequencyTime) / 2000
                if elapsed > 0 {
                    let cadence = 60 * Double(events) / elapsed
                    reading.cadence = cadence
                    if let offset = torqueFrequencyOffset, slope > 0 {
                        let frequency = Double(ticks &- lastTorqueTicks) / elapsed
                        let torque = Swift.max(0, frequency - offset) / slope
                        reading.averageTorque = torque
                        reading.averagePower = torque * cadence * Double.pi / 30
                    }
                } else {
                    reading.cadence = 0
                    reading.averagePower = 0
                }
            } else if frequencyIdle.idle(stopAfter: stopAfter) {
                reading.cadence = 0
                reading.averagePower = 0
            }
        }
        hasFrequency = true
        lastFrequencyEvent = event
        lastFrequencyTime = time
        lastTorqueTicks = ticks
        return reading
    }

    /// FE-C pages: 16 general (equipment type, elapsed time 1/4 s, distance m rolling at 256, speed
    /// 1/1000 m/s, heart rate), 25 trainer (event count, cadence, accumulated power, 12-bit
    /// instantaneous power), 19 treadmill (cadence); nil for other pages.
    private mutating func fitnessEquipment(_ data: UnsafeRawBufferPointer, stopAfter: Int) -> FitnessEquipmentReading? {
        switch data[0] {
        case 0x10:
            equipmentType = data[1] & 0x1F
            let distance = data[3]
            if hasFEDistance { feDistance &+= UInt64(distance &- lastFEDistance) }
            hasFEDistance = true
            lastFEDistance = distance
            let speed = LittleEndian.u16(data, 4)
            return FitnessEquipmentReading(
                page: 0x10, equipmentType: equipmentType, speed: speed == 0xFFFF ? nil : Double(speed) / 1000,
                totalDistance: Double(feDistance), elapsedTime: Double(data[2]) / 4,
                heartRate: data[6] == 0xFF || data[6] == 0 ? nil : Int(data[6]))
        case 0x19:
            let event = data[1]
            let accumulated = LittleEndian.u16(data, 3)
            let power = Int(UInt16(data[5]) | UInt16(data[6] & 0x0F) << 8)
            var reading = FitnessEquipmentReading(
                page: 0x19, equipmentType: equipmentType, instantaneousPower: power == 0xFFF ? nil : power,
                cadence: data[2] == 0xFF ? nil : Int(data[2]))
            if hasFEPower {
                let events = event &- lastFEEvent
                if events > 0 {
                    fePowerIdle.reset()
                    reading.averagePower = Double(accumulated &- lastFEAccumulated) / Double(events)
                } else if fePowerIdle.idle(stopAfter: stopAfter) {
                    reading.averagePower = 0
                }
            }
            hasFEPower = true
            lastFEEvent = event
            lastFEAccumulated = accumulated
            return reading
        case 0x13:
            return FitnessEquipmentReading(
                page: 0x13, equipmentType: equipmentType, cadence: data[4] == 0xFF ? nil : Int(data[4]))
        default:
            return nil
        }
    }

    /// Page 1: time (1/200 s), distance (1/16 m, rolls over at 256 m), speed (1/256 m/s), strides.
    private mutating func footPodPage1(_ data: UnsafeRawBufferPointer) -> StrideReading {
        let distance = UInt16(data[3]) << 4 | UInt16(data[4] >> 4)
        let strides = data[6]
        if hasStride {
            totalDistance &+= UInt64((distance &- lastDistance) & 0x0FFF)
            totalStrides &+= Int(strides &- lastStrides)
        }
        hasStride = true
        lastDistance = distance
        lastStrides = strides
        return StrideReading(
            page: 1, speed: Double(data[4] & 0x0F) + Double(data[5]) / 256, totalDistance: Double(totalDistance) / 16,
            totalStrides: totalStrides, time: Double(data[2]) + Double(data[1]) / 200)
    }
}
