// The live page: one snapshot of the runtime's metrics per update (server-sent events from /events),
// drawn into the static page (index.html). No framework and no build step: plain DOM and SVG.

const $ = (id) => document.getElementById(id)
const COLORS = ['#2563eb', '#dc2626', '#16a34a', '#9333ea', '#ea580c', '#0891b2', '#ca8a04', '#db2777']
/** Snapshots kept for the chart (one a second by default: five minutes). */
const HISTORY = 300

const history = []
let previous

const number = (n) => (n === undefined || n === null ? '–' : Math.round(n).toLocaleString('en-US'))
const instant = (t) => (t === undefined || t === null ? '–' : new Date(t).toISOString().slice(0, 19).replace('T', ' '))

function duration(ms) {
  if (ms === undefined || ms === null) return '–'
  const sign = ms < 0 ? '−' : ''
  let rest = Math.abs(ms)
  if (rest < 1) return `${sign}${rest.toFixed(2)} ms`
  if (rest < 1000) return `${sign}${rest.toFixed(rest < 10 ? 1 : 0)} ms`
  if (rest < 60_000) return `${sign}${(rest / 1000).toFixed(1)} s`
  const parts = []
  for (const [unit, size] of [['d', 86_400_000], ['h', 3_600_000], ['min', 60_000], ['s', 1000]]) {
    if (rest >= size && parts.length < 2) {
      parts.push(`${Math.floor(rest / size)} ${unit}`)
      rest %= size
    }
  }
  return sign + parts.join(' ')
}

/** A due time relative to a clock: '+5 min' (due in 5 min), or 'due' when the clock has reached it. */
function until(due, now) {
  if (due === undefined || due === null) return '–'
  if (now === undefined || now === null) return instant(due)
  return due <= now ? 'due' : `+${duration(due - now)}`
}

function cell(row, field, text, title) {
  let td = row.querySelector(`td[data-field="${field}"]`)
  if (td === null) {
    td = document.createElement('td')
    td.dataset.field = field
    row.append(td)
  }
  if (td.textContent !== text) td.textContent = text
  if (title !== undefined) td.title = title
  return td
}

function summary(m, rate) {
  $('app').textContent = m.applicationId
  const state = $('state')
  state.textContent = m.state
  state.className = `badge ${m.state}`
  $('clock').textContent = instant(m.wallClockTime)
  $('processed').textContent = number(m.processedRecords)
  $('rate').textContent = rate === undefined ? '–' : number(rate)
  $('emitted').textContent = number(m.emittedRecords)
  $('dropped').textContent = number(Object.values(m.droppedRecords).reduce((a, b) => a + b, 0))
  $('punctuations').textContent = number(m.punctuations)
  $('commits').textContent = m.commits === undefined ? '–' : `${number(m.commits.commits)} · ${duration(m.commits.meanMs)} / ${duration(m.commits.maxMs)}`
  $('restoring').textContent = number(m.restoring.length)
}

function tasks(m, seconds) {
  const body = document.querySelector('#tasks tbody')
  const seen = new Set()
  const largestBuffer = Math.max(1, ...m.tasks.flatMap((t) => t.suppressionBuffers.map((b) => b.records)))
  for (const t of m.tasks) {
    seen.add(t.taskId)
    let row = body.querySelector(`tr[data-task="${t.taskId}"]`)
    if (row === null) {
      row = document.createElement('tr')
      row.dataset.task = t.taskId
      body.append(row)
    }
    const before = previous?.tasks.find((p) => p.taskId === t.taskId)
    const rate = before === undefined || seconds <= 0 ? undefined : (t.processedRecords - before.processedRecords) / seconds
    const dropped = Object.entries(t.droppedRecords).filter(([, n]) => n > 0)
    const timers = t.pendingTimers
    cell(row, 'task', t.taskId)
    cell(row, 'streamTime', instant(t.streamTime))
    cell(row, 'lag', duration(t.streamTimeLagMs))
    cell(row, 'processed', number(t.processedRecords))
    cell(row, 'emitted', number(t.emittedRecords))
    cell(row, 'rate', rate === undefined ? '–' : number(rate))
    cell(row, 'dropped', number(dropped.reduce((a, [, n]) => a + n, 0)), dropped.map(([r, n]) => `${r}: ${n}`).join('\n'))
    const next = t.nextPunctuation
    cell(row, 'nextPunctuation', `${until(next.streamTime, t.streamTime)} · ${until(next.wallClock, m.wallClockTime)}`, `stream time ${instant(next.streamTime)}\nwall clock ${instant(next.wallClock)}`)
    cell(row, 'nextTimer', `${until(t.nextTimer.event, t.streamTime)} · ${until(t.nextTimer.processing, m.wallClockTime)}`, `event time ${instant(t.nextTimer.event)}\nprocessing time ${instant(t.nextTimer.processing)}`)
    cell(row, 'pendingTimers', `${number(timers.user.event + timers.user.processing)} · ${number(timers.ttl.event + timers.ttl.processing)}`,
      `user: ${timers.user.event} event-time, ${timers.user.processing} processing-time\nTTL: ${timers.ttl.event} event-time, ${timers.ttl.processing} processing-time`)
    const buffers = cell(row, 'suppression', t.suppressionBuffers.length === 0 ? '–' : t.suppressionBuffers.map((b) => `${number(b.records)}${b.spilled > 0 ? ` (${number(b.spilled)} on disk)` : ''}`).join(', '),
      t.suppressionBuffers.map((b) => `${b.store}: ${b.records} records, ${b.bytes} bytes, ${b.spilled} spilled`).join('\n'))
    if (t.suppressionBuffers.length > 0) {
      const bar = document.createElement('span')
      bar.className = 'bar'
      bar.style.width = `${Math.round((40 * Math.max(...t.suppressionBuffers.map((b) => b.records))) / largestBuffer)}px`
      buffers.append(bar)
    }
    cell(row, 'inputLag', number(t.inputs.reduce((a, i) => a + (i.lag ?? 0), 0)), t.inputs.map((i) => `${i.topic}-${i.partition}: position ${i.position}, end ${i.endOffset ?? '?'}, lag ${i.lag ?? '?'}`).join('\n'))
    cell(row, 'latency', `${duration(t.processLatencyAvgMs)} · ${duration(t.e2eLatency?.avgMs)}`)
  }
  for (const row of [...body.rows]) if (!seen.has(row.dataset.task)) row.remove()
  $('no-tasks').hidden = m.tasks.length > 0
}

function restoring(m) {
  $('restore-section').hidden = m.restoring.length === 0
  const body = document.querySelector('#restore tbody')
  body.replaceChildren(
    ...m.restoring.map((r) => {
      const row = document.createElement('tr')
      for (const text of [r.taskId, r.from, number(r.restored), number(r.remaining)]) row.append(Object.assign(document.createElement('td'), { textContent: text }))
      return row
    }),
  )
}

/** Each task's stream time (y) over the wall clock (x), for the snapshots kept. */
function chart() {
  const svg = $('chart')
  const W = 900
  const H = 240
  const left = 130
  const bottom = 20
  const points = history.flatMap((h) => h.tasks.filter((t) => t.streamTime !== undefined))
  if (points.length === 0) {
    svg.innerHTML = `<text x="${left}" y="${H / 2}">no stream time yet</text>`
    return
  }
  const x0 = history[0].wall
  const x1 = Math.max(history[history.length - 1].wall, x0 + 1000)
  let y0 = Math.min(...points.map((p) => p.streamTime))
  let y1 = Math.max(...points.map((p) => p.streamTime))
  if (y1 - y0 < 1000) {
    y0 -= 500
    y1 += 500
  }
  const x = (t) => left + ((t - x0) / (x1 - x0)) * (W - left - 10)
  const y = (t) => 10 + (1 - (t - y0) / (y1 - y0)) * (H - bottom - 20)
  const ids = [...new Set(history.flatMap((h) => h.tasks.map((t) => t.taskId)))].sort()
  const lines = ids.map((id, i) => {
    const pts = history.flatMap((h) => h.tasks.filter((t) => t.taskId === id && t.streamTime !== undefined).map((t) => `${x(h.wall).toFixed(1)},${y(t.streamTime).toFixed(1)}`))
    return `<polyline data-task="${id}" fill="none" stroke="${COLORS[i % COLORS.length]}" stroke-width="2" points="${pts.join(' ')}"/>`
  })
  svg.innerHTML = [
    `<line class="axis" x1="${left}" y1="${H - bottom}" x2="${W - 10}" y2="${H - bottom}"/>`,
    `<line class="axis" x1="${left}" y1="10" x2="${left}" y2="${H - bottom}"/>`,
    `<text x="4" y="16">${instant(y1)}</text>`,
    `<text x="4" y="${H - bottom}">${instant(y0)}</text>`,
    `<text x="${left}" y="${H - 4}">${instant(x0)}</text>`,
    `<text x="${W - 10}" y="${H - 4}" text-anchor="end">${instant(x1)} (wall clock)</text>`,
    ...lines,
  ].join('')
  $('legend').innerHTML = ids.map((id, i) => `<span><i style="background:${COLORS[i % COLORS.length]}"></i>task ${id}</span>`).join('')
}

/** Each node of the drawn topology gets the records it was given, summed over the tasks. */
function nodeCounts(m) {
  const counts = new Map()
  for (const t of m.tasks) for (const p of t.processors) counts.set(p.name, (counts.get(p.name) ?? 0) + p.records)
  for (const g of document.querySelectorAll('#topology g.node')) {
    const rect = g.querySelector('rect')
    if (rect === null) continue
    let label = g.querySelector('text.count')
    if (label === null) {
      label = document.createElementNS('http://www.w3.org/2000/svg', 'text')
      label.setAttribute('class', 'count')
      label.setAttribute('text-anchor', 'end')
      // Just above the box's right end, in the gap between rows: the box's own lines stay clear.
      label.setAttribute('x', String(Number(rect.getAttribute('x')) + Number(rect.getAttribute('width'))))
      label.setAttribute('y', String(Number(rect.getAttribute('y')) - 3))
      g.append(label)
    }
    label.textContent = number(counts.get(g.dataset.node) ?? 0)
  }
}

function update(m) {
  const seconds = previous === undefined ? 0 : (m.wallClockTime - previous.wallClockTime) / 1000
  const rate = previous === undefined || seconds <= 0 ? undefined : (m.processedRecords - previous.processedRecords) / seconds
  summary(m, rate)
  tasks(m, seconds)
  restoring(m)
  history.push({ wall: m.wallClockTime, tasks: m.tasks.map((t) => ({ taskId: t.taskId, streamTime: t.streamTime })) })
  if (history.length > HISTORY) history.shift()
  chart()
  nodeCounts(m)
  previous = m
}

async function topology() {
  const res = await fetch('topology.svg')
  const target = $('topology')
  target.classList.remove('empty')
  target.innerHTML = res.ok ? await res.text() : `<p class="empty">topology unavailable (${res.status})</p>`
}

const events = new EventSource('events')
events.addEventListener('metrics', (e) => update(JSON.parse(e.data)))
events.addEventListener('error', () => {
  const state = $('state')
  state.textContent = 'offline (reconnecting)'
  state.className = 'badge offline'
})
topology()
