// The trigger topic, filtered on application properties: Priority for work, Kind=gate for
// the release gate's broadcast (docs/patterns.md).
//
// The roles do not manage entities here (no BILLING_SERVICEBUS_MANAGE_ENTITIES, no Data
// Owner role): processors share the subscriptions declared below, one per priority, each
// also taking the gate's broadcast; the controller has its own. A subscription created
// through ARM gets a `$Default` rule that takes every message, so each one's first rule
// is declared under that name, replacing it (rules are ORed). tests/infra/test_names.py
// checks these against the specs the code opens.
param name string
param location string
param tags object

var priorities = [ 'high', 'normal', 'low' ]
var subscriptionProperties = {
  maxDeliveryCount: 10
  lockDuration: 'PT1M'
  defaultMessageTimeToLive: 'PT1H'
  deadLetteringOnMessageExpiration: false
}

resource namespace 'Microsoft.ServiceBus/namespaces@2024-01-01' = {
  name: name
  location: location
  tags: tags
  sku: { name: 'Standard', tier: 'Standard' } // topics need Standard
  properties: {
    disableLocalAuth: true
    minimumTlsVersion: '1.2'
  }
}

resource topic 'Microsoft.ServiceBus/namespaces/topics@2024-01-01' = {
  parent: namespace
  name: 'triggers'
  properties: { defaultMessageTimeToLive: 'PT1H' }
}

resource processorSubscriptions 'Microsoft.ServiceBus/namespaces/topics/subscriptions@2024-01-01' = [
  for p in priorities: {
    parent: topic
    name: 'processors-${p}'
    properties: subscriptionProperties
  }
]

resource priorityRules 'Microsoft.ServiceBus/namespaces/topics/subscriptions/rules@2024-01-01' = [
  for (p, i) in priorities: {
    parent: processorSubscriptions[i]
    name: '$Default'
    properties: {
      filterType: 'CorrelationFilter'
      correlationFilter: { properties: { Priority: p } }
    }
  }
]

resource gateRules 'Microsoft.ServiceBus/namespaces/topics/subscriptions/rules@2024-01-01' = [
  for (p, i) in priorities: {
    parent: processorSubscriptions[i]
    name: 'gate'
    properties: {
      filterType: 'CorrelationFilter'
      correlationFilter: { properties: { Kind: 'gate' } }
    }
  }
]

// The controller's subscription: every accepted batch wakes it (its results follow soon).
resource controllerSubscription 'Microsoft.ServiceBus/namespaces/topics/subscriptions@2024-01-01' = {
  parent: topic
  name: 'controller'
  properties: subscriptionProperties
}

resource controllerRule 'Microsoft.ServiceBus/namespaces/topics/subscriptions/rules@2024-01-01' = {
  parent: controllerSubscription
  name: '$Default'
  properties: {
    filterType: 'CorrelationFilter'
    correlationFilter: { properties: { Kind: 'work' } }
  }
}

// Batch events (docs/events.md): the controller's relay publishes one CloudEvent per batch
// outcome here, with a sender role on this topic only (main.bicep). `tail` is the
// subscription `billing events tail` reads, taking every event (its `$Default` rule);
// subscribers add their own, filtered on the `type` property if they like.
resource eventsTopic 'Microsoft.ServiceBus/namespaces/topics@2024-01-01' = {
  parent: namespace
  name: 'batch-events'
  // Kept for a day unread; receivers de-duplicate on the CloudEvent's id (at least once).
  properties: { defaultMessageTimeToLive: 'P1D' }
}

resource tailSubscription 'Microsoft.ServiceBus/namespaces/topics/subscriptions@2024-01-01' = {
  parent: eventsTopic
  name: 'tail'
  properties: {
    maxDeliveryCount: 10
    lockDuration: 'PT1M'
    defaultMessageTimeToLive: 'P1D'
    deadLetteringOnMessageExpiration: false
  }
}

// The controller also hears every release of the gate: the held batches' results follow
// within seconds.
resource controllerGateRule 'Microsoft.ServiceBus/namespaces/topics/subscriptions/rules@2024-01-01' = {
  parent: controllerSubscription
  name: 'gate'
  properties: {
    filterType: 'CorrelationFilter'
    correlationFilter: { properties: { Kind: 'gate' } }
  }
}

output name string = namespace.name
output eventsTopicName string = eventsTopic.name
output fullyQualifiedNamespace string = '${namespace.name}.servicebus.windows.net'
